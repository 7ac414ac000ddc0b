// Package api serves the admin REST API of api/openapi.yaml: authenticated review of
// parked and scheduled records, single replays and discards, bulk jobs, routes, runs,
// stats and the audit log. It talks only to PostgreSQL; dlq-worker executes the jobs.
package api

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	pathpkg "path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"golang.org/x/time/rate"

	"github.com/dlqops/dlq/internal/auth"
	"github.com/dlqops/dlq/internal/masking"
	"github.com/dlqops/dlq/internal/schemas"
	"github.com/dlqops/dlq/internal/store"
)

// Config is what the server needs. Every field but Clock is required.
type Config struct {
	Store *store.Store
	Auth  *auth.Authenticator
	// ReplayTopics are the topics a replay may target besides a record's original topic.
	ReplayTopics []string
	// MaxBodyBytes caps request bodies.
	MaxBodyBytes int64
	Log          zerolog.Logger
	Registerer   prometheus.Registerer
	// Limits bound what callers may consume; zero values take the defaults.
	Limits Limits
	// Masking hides configured payload fields from every answer but an audited unmask;
	// nil masks nothing.
	Masking *masking.Masker
	// Schemas decodes keys and values in the Schema Registry wire format and encodes
	// value_json edits; nil when no schema_registry is configured.
	Schemas *schemas.Registry
	// Clock bounds bulk selections to the records stored before the request and drives
	// the rate limits; time.Now when nil.
	Clock func() time.Time
}

// Server is the API's http.Handler.
type Server struct {
	cfg      Config
	log      zerolog.Logger
	mux      *http.ServeMux
	requests *prometheus.CounterVec
	callers  *callerLimits
	inFlight prometheus.Gauge
	// gate bounds the requests using the database at once, fairly across callers.
	gate *fairGate
	// refusals.go: the audit rows of refused requests and sign-ins.
	*refusalAudit
	masks *masks
	// decoded.go: payloads through the Schema Registry.
	payloads decoding
}

// Route is one endpoint: method and path pattern (as in the spec, {name} for parameters)
// and the least role that may call it.
type Route struct {
	Method, Path string
	Role         auth.Role
	handle       handler
	// Unscoped routes are refused to tokens limited to topics: routes and runs concern a
	// DLQ topic, which carries records of any original topic.
	Unscoped bool
}

// handler returns the status and body of a success, or an error for problemFor.
type handler func(c *call) (int, any, error)

// New builds the server and registers its metrics.
func New(cfg Config) (*Server, error) {
	if cfg.Store == nil || cfg.Auth == nil || cfg.MaxBodyBytes <= 0 || cfg.Registerer == nil {
		return nil, errors.New("api: Store, Auth, MaxBodyBytes and Registerer are required")
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	cfg.Limits.WithDefaults()
	if err := cfg.Limits.Validate(); err != nil {
		return nil, err
	}
	s := &Server{
		cfg: cfg, payloads: decoding{registry: cfg.Schemas},
		log: cfg.Log.With().Str("component", "api").Logger(),
		mux: http.NewServeMux(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "dlq_admin_requests_total",
			Help: "Admin API requests by route and status code.",
		}, []string{"method", "route", "code"}),
		callers: newCallerLimits(cfg.Limits, cfg.Clock),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "dlq_admin_requests_in_flight",
			Help: "Admin API requests of authenticated callers in progress.",
		}),
	}
	s.refusalAudit = &refusalAudit{clock: cfg.Clock, store: cfg.Store, log: s.log,
		unaudited: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "dlq_admin_unaudited_refusals_total",
			Help: "Refused requests that were not audited: without a valid token beyond limits.unauthenticated_audit_per_second, or from more callers at once than refusals can be folded for.",
		}),
		anonAudit: rate.NewLimiter(rate.Limit(cfg.Limits.UnauthenticatedAuditPerSecond), unauthenticatedAuditBurst),
	}
	s.masks = &masks{m: cfg.Masking, audit: cfg.Store, clock: cfg.Clock}
	s.refusals = newRefusalWindows(cfg.Clock, s.writeAudit)
	s.gate = newFairGate(cfg.Limits.MaxConcurrentTotal)
	for _, c := range []prometheus.Collector{s.requests, s.unaudited, s.inFlight} {
		if err := cfg.Registerer.Register(c); err != nil {
			return nil, err
		}
	}
	allow := map[string][]string{}
	var paths []string
	for _, rt := range s.Routes() {
		s.mux.Handle(rt.Method+" "+rt.Path, s.endpoint(rt))
		if allow[rt.Path] == nil {
			paths = append(paths, rt.Path)
		}
		allow[rt.Path] = append(allow[rt.Path], rt.Method)
	}
	for _, p := range paths {
		h := s.fallback(probMethod.with("see Allow"), p, strings.Join(allow[p], ", "))
		if !besideWildcard(p, paths) {
			s.mux.Handle(p, h)
			continue
		}
		// A fallback for every method would match a GET as the wildcard path's route
		// does, which the mux refuses: one per other method instead.
		for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete,
			http.MethodOptions, http.MethodTrace, http.MethodConnect} {
			if !slices.Contains(allow[p], m) {
				s.mux.Handle(m+" "+p, h)
			}
		}
	}
	s.mux.Handle("/v1/", s.fallback(probNotFound.with("no such endpoint"), "unknown", ""))
	return s, nil
}

// besideWildcard reports whether static path p has a sibling with a wildcard in the same
// place (/v1/records/export beside /v1/records/{id}).
func besideWildcard(p string, paths []string) bool {
	dir, _ := pathpkg.Split(p)
	for _, q := range paths {
		if qd, last := pathpkg.Split(q); qd == dir && q != p && strings.HasPrefix(last, "{") {
			return true
		}
	}
	return false
}

// Routes is the route table; the tests check it against the spec.
func (s *Server) Routes() []Route {
	return []Route{
		{"GET", "/v1/records", auth.Viewer, s.listRecords, false},
		{"GET", "/v1/incidents", auth.Viewer, s.listIncidents, false},
		{"GET", "/v1/records/export", auth.Viewer, exportRecords(s), false},
		{"GET", "/v1/records/{id}", auth.Viewer, s.getRecord, false},
		{"POST", "/v1/records/{id}/replay", auth.Operator, s.replayRecord, false},
		{"POST", "/v1/records/{id}/discard", auth.Operator, s.discardRecord, false},
		{"POST", "/v1/records/{id}/retry-now", auth.Operator, s.retryNow, false},
		{"POST", "/v1/bulk/replay", auth.Admin, s.bulk(store.JobReplay), false},
		{"POST", "/v1/bulk/discard", auth.Admin, s.bulk(store.JobDiscard), false},
		{"GET", "/v1/jobs", auth.Viewer, s.listJobs, false},
		{"GET", "/v1/jobs/{id}", auth.Viewer, s.getJob, false},
		{"POST", "/v1/jobs/{id}/cancel", auth.Operator, s.cancelJob, false},
		{"GET", "/v1/stats", auth.Viewer, s.stats, false},
		{"GET", "/v1/stats/parked-over-time", auth.Viewer, s.parkedOverTime, false},
		{"GET", "/v1/routes", auth.Viewer, s.listRoutes, true},
		{"POST", "/v1/routes/{route}/pause", auth.Operator, s.pauseRoute(true), true},
		{"POST", "/v1/routes/{route}/resume", auth.Operator, s.pauseRoute(false), true},
		{"POST", "/v1/routes/{route}/run", auth.Operator, s.runRoute, true},
		{"POST", "/v1/routes/{route}/breaker", auth.Operator, setRouteBreaker(s.cfg.Store), true},
		{"GET", "/v1/runs", auth.Viewer, s.listRuns, true},
		{"GET", "/v1/audit", auth.Viewer, s.listAudit, false},
	}
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// call is one request on its way through an endpoint.
type call struct {
	w         http.ResponseWriter
	r         *http.Request
	principal auth.Principal
	actor     store.Actor
	log       zerolog.Logger
}

var validRequestID = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// requestID is the server's id of a request, always generated here: a client's
// X-Request-Id is any text the client likes, so it is only kept beside it (clientRequestID).
func requestID() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand never fails on supported platforms
	return hex.EncodeToString(b[:])
}

// clientRequestID is the client's X-Request-Id when it is short and plain, else "".
func clientRequestID(r *http.Request) string {
	if id := r.Header.Get("X-Request-Id"); validRequestID.MatchString(id) {
		return id
	}
	return ""
}

// endpoint authenticates, authorizes, caps the body, runs the handler and writes its
// answer, then audits a refusal, counts and logs the outcome. Every mutating request is
// logged with its actor, allowed or not; the token itself never is.
func (s *Server) endpoint(rt Route) http.Handler {
	mutating := rt.Method != http.MethodGet
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rid := requestID()
		w.Header().Set("X-Request-Id", rid)
		secureHeaders(w)
		log := s.log.With().Str("request_id", rid).Str("method", rt.Method).Str("route", rt.Path).Logger()
		c := &call{w: w, r: r, actor: store.Actor{Name: "anonymous", RequestID: rid, ClientRequestID: clientRequestID(r)}, log: log}
		status, err := s.serve(c, rt)
		actor := c.actor.Name
		if audited(rt, status, err) {
			s.auditRefusal(c, rt, status, err)
		}
		s.requests.WithLabelValues(rt.Method, rt.Path, strconv.Itoa(status)).Inc()
		ev := log.Debug()
		switch {
		case status == statusClientClosed:
			ev = log.Info().Bool("cancelled", true)
		case status >= 500:
			ev = log.Error().Err(err)
		case mutating || status == http.StatusUnauthorized || status == http.StatusForbidden:
			ev = log.Info()
		}
		if err != nil && status < 500 {
			ev = ev.Str("problem", err.Error())
		}
		ev.Str("actor", actor).Str("path", r.URL.Path).Int("status", status).Msg("request")
		var aborted *streamAborted
		if errors.As(err, &aborted) {
			panic(http.ErrAbortHandler)
		}
	})
}

// serve answers c; c.principal and c.actor name the caller once authenticated.
func (s *Server) serve(c *call, rt Route) (int, error) {
	w, r := c.w, c.r
	fail := func(err error) (int, error) {
		p, _ := problemFor(err)
		writeProblem(w, p, c.actor.RequestID)
		return p.Status, err
	}
	// Bounded before anything could read it; only an admitted caller's handler does.
	r.Body = http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes)
	p, err := s.cfg.Auth.Authenticate(r.Header.Get("Authorization"))
	if err != nil {
		return fail(probUnauthorized.with(unauthorizedDetail(r.Header.Get("Authorization"))))
	}
	c.principal, c.actor.Name, c.log = p, p.Name, c.log.With().Str("actor", p.Name).Logger()
	if !p.Role.Allows(rt.Role) {
		return fail(probForbidden.with("this needs the " + string(rt.Role) + " role"))
	}
	if rt.Unscoped && len(p.Topics) > 0 {
		return fail(probForbidden.with("routes and runs need a token without topics"))
	}
	release, refused := s.callers.admit(p.Name, fromConsole(r.Context()))
	if refused != nil {
		return fail(refused)
	}
	defer release()
	wait, cancel := context.WithTimeout(r.Context(), gateWait)
	err = s.gate.enter(wait, p.Name)
	cancel()
	switch {
	case err != nil && r.Context().Err() != nil:
		return fail(errClientGone)
	case err != nil:
		return fail(tooMany(fmt.Sprintf("the server is serving %d requests at once (limits.max_concurrent_total)",
			s.cfg.Limits.MaxConcurrentTotal), time.Second))
	}
	defer s.gate.leave(p.Name)
	s.inFlight.Inc()
	defer s.inFlight.Dec()
	if r.ContentLength > s.cfg.MaxBodyBytes {
		return fail(&http.MaxBytesError{Limit: s.cfg.MaxBodyBytes})
	}
	if rt.Method != http.MethodGet {
		// A change the server accepted is made whole even if the client goes away (an
		// operator who clicks Pause and navigates on): its transaction either commits with
		// its audit row or never starts, bounded by the database's statement timeout.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), mutationTimeout)
		defer cancel()
		c.r = r.WithContext(ctx)
	}
	status, body, err := rt.handle(c)
	if err != nil && rt.Method == http.MethodGet && r.Context().Err() != nil {
		// The client went away while its read ran: not the database's fault.
		return fail(errClientGone)
	}
	if err != nil {
		return fail(err)
	}
	if st, ok := body.(streamer); ok {
		if err := st.stream(w); err != nil {
			if r.Context().Err() != nil {
				return statusClientClosed, &streamAborted{err}
			}
			return http.StatusInternalServerError, &streamAborted{err}
		}
		return status, nil
	}
	writeJSON(w, status, body)
	return status, nil
}

// streamer is a body written as it is read (an export) rather than encoded whole. A
// failure once it started cannot change the status: the endpoint aborts the connection, so
// the client sees a truncated transfer, never an answer that looks complete.
type streamer interface {
	stream(w http.ResponseWriter) error
}

// streamAborted is the failure of a streamed body after its status was sent.
type streamAborted struct{ err error }

func (e *streamAborted) Error() string { return "stream aborted: " + e.err.Error() }
func (e *streamAborted) Unwrap() error { return e.err }

// fallback answers paths and methods no route serves, as a problem; allow lists the
// methods of a known path (405). The method label is a fixed value: the client's method
// is any text it likes, and a label per value would grow the registry without bound.
func (s *Server) fallback(p *Problem, label, allow string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rid := requestID()
		w.Header().Set("X-Request-Id", rid)
		secureHeaders(w)
		if allow != "" {
			w.Header().Set("Allow", allow)
		}
		writeProblem(w, p.with(p.Detail), rid)
		s.requests.WithLabelValues(unmatchedMethod, label, strconv.Itoa(p.Status)).Inc()
	})
}

// consoleKey marks the context of a request the console makes on an operator's behalf.
type consoleKey struct{}

// ForConsole marks ctx as a console page's request to the API, which the API counts
// against the token's console budget (limits.console_max_concurrent). Only the console,
// in process, can mark a request: nothing a client sends does.
func ForConsole(ctx context.Context) context.Context {
	return context.WithValue(ctx, consoleKey{}, true)
}

func fromConsole(ctx context.Context) bool { return ctx.Value(consoleKey{}) != nil }

// unmatchedMethod labels requests no route matched.
const unmatchedMethod = "other"

// secureHeaders keep answers (payloads, tokens' views) out of caches and stop browsers from
// sniffing a JSON body into something they would execute.
func secureHeaders(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
}

// unauthorizedDetail says why a token was refused when saying so gives nothing away: a
// token shorter than the minimum cannot be valid, whatever tokens are configured. Any
// other refusal gets one text, so the answer tells nothing about the configured tokens.
func unauthorizedDetail(header string) string {
	scheme, token, ok := strings.Cut(header, " ")
	if ok && strings.EqualFold(scheme, "Bearer") && token != "" && len(token) < auth.MinTokenLength {
		return fmt.Sprintf("the token is too short: a token has at least %d characters (`dlq-admin token new` makes one)", auth.MinTokenLength)
	}
	return "give a valid token: Authorization: Bearer <token>"
}
