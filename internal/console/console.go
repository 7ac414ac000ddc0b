// Package console serves dlq-admin's operator console: server-rendered pages for parked
// records, jobs, routes, runs and the audit log, under /ui/.
//
// The console has no path to the data of its own. Every page and every action is a request
// to the REST API handler in the same process, made with the signed-in operator's bearer
// token: the console reads and changes exactly what the API lets that token read and
// change (the same handlers, store calls, roles, topic scopes and audit entries), and an
// action the API refuses is refused in the console too.
//
// A sign-in exchanges a token for a session cookie (HttpOnly, SameSite=Strict, Secure and
// __Host- prefixed over https, expiring); sign-ins are throttled per client address and
// audited; every state change carries the session's CSRF token; every page is sent with a
// Content-Security-Policy that allows only the console's own embedded script and style, so
// attacker text that reached a page would stay inert even if it were not escaped.
package console

import (
	"embed"
	"errors"
	"io/fs"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/dlqops/dlq/internal/auth"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Config is what the console needs. API, Auth, Audit and Spec are required.
type Config struct {
	// API is the REST API handler (internal/api) that serves every page's data.
	API  http.Handler
	Auth *auth.Authenticator
	// Audit writes the audit rows of refused sign-ins (the API server does).
	Audit SignInAuditor
	// Spec is api/openapi.yaml, served as is and as a reference page.
	Spec []byte
	// ReplayTopics are offered as replay targets besides a record's original topic (the
	// API checks them anyway).
	ReplayTopics []string
	// MaxFormBytes bounds the form of a signed-in state change (an edited record's value
	// and headers, URL-encoded); 4 MiB when zero.
	MaxFormBytes int64
	// PublicURL is the console's address as operators reach it; https makes its cookies
	// Secure and __Host- prefixed and adds HSTS even when a TLS-terminating proxy serves
	// it to this process over plain HTTP. Empty: https only when this process serves TLS.
	PublicURL string
	// Registerer receives the console's metrics; a registry of its own when nil.
	Registerer prometheus.Registerer
	// SessionTTL is how long a sign-in lasts; 8h when zero.
	SessionTTL time.Duration
	Log        zerolog.Logger
	// Clock is time.Now when nil.
	Clock func() time.Time
}

// SignInAuditor audits refused sign-ins by client address; outcome is unauthorized or
// rate_limited.
type SignInAuditor interface {
	AuditSignIn(addr, outcome, detail string)
}

// Server is the console's http.Handler; mount it at "/ui/" (and "/" for the redirect).
type Server struct {
	cfg      Config
	log      zerolog.Logger
	mux      *http.ServeMux
	sessions *sessions
	signIns  *signInThrottle
	// signInOutcomes counts sign-ins by outcome: ok, unauthorized, rate_limited, stale_form.
	signInOutcomes *prometheus.CounterVec
	ref            *reference
	*renderer      // render.go: pages, error pages and the redirect after an action
}

// New parses the templates and the spec.
func New(cfg Config) (*Server, error) {
	if cfg.API == nil || cfg.Auth == nil || cfg.Audit == nil || len(cfg.Spec) == 0 {
		return nil, errors.New("console: API, Auth, Audit and Spec are required")
	}
	if cfg.SessionTTL <= 0 {
		cfg.SessionTTL = 8 * time.Hour
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	if cfg.MaxFormBytes <= 0 {
		cfg.MaxFormBytes = 4 << 20
	}
	if cfg.Registerer == nil {
		cfg.Registerer = prometheus.NewRegistry()
	}
	tmpl, err := parsePages(cfg.Clock)
	if err != nil {
		return nil, err
	}
	ref, err := parseReference(cfg.Spec)
	if err != nil {
		return nil, err
	}
	jar := cookieJar{httpsURL: strings.HasPrefix(cfg.PublicURL, "https://")}
	s := &Server{
		cfg: cfg, log: cfg.Log.With().Str("component", "console").Logger(), mux: http.NewServeMux(),
		sessions: newSessions(jar, cfg.SessionTTL, cfg.Clock), signIns: newSignInThrottle(cfg.Clock),
		ref: ref,
		signInOutcomes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "dlq_admin_console_signins_total",
			Help: "Console sign-ins by outcome: ok, unauthorized (not a valid token), rate_limited (throttled), stale_form (CSRF).",
		}, []string{"outcome"}),
	}
	s.renderer = &renderer{pages: tmpl, log: s.log}
	if err := cfg.Registerer.Register(s.signInOutcomes); err != nil {
		return nil, err
	}
	static, _ := fs.Sub(staticFS, "static") // the directory is embedded above
	s.mux.Handle("GET /ui/static/", http.StripPrefix("/ui/static/", http.FileServerFS(filesOnly{static})))
	s.mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/ui/", http.StatusSeeOther)
	})
	s.mux.HandleFunc("GET /ui/login", signIn{s}.page)
	s.mux.HandleFunc("POST /ui/login", signIn{s}.submit)
	s.mux.HandleFunc("GET /ui/openapi.yaml", s.spec)
	s.mux.HandleFunc("GET /ui/reference", s.reference)
	s.page("POST /ui/logout", signIn{s}.logout)
	s.page("GET /ui/{$}", s.overview)
	s.page("GET /ui/records", s.records)
	s.page("GET /ui/incidents", s.incidents)
	s.page("GET /ui/records/{id}", s.record)
	s.page("POST /ui/records/{id}/replay", s.replay)
	s.page("POST /ui/records/{id}/discard", s.discard)
	s.page("POST /ui/records/{id}/retry-now", s.retryNow)
	s.page("POST /ui/bulk", s.bulk)
	s.page("GET /ui/jobs", s.jobs)
	s.page("GET /ui/jobs/{id}", s.job)
	s.page("GET /ui/jobs/{id}/progress", s.jobProgress)
	s.page("POST /ui/jobs/{id}/cancel", s.cancelJob)
	s.page("GET /ui/routes", s.routes)
	s.page("POST /ui/routes/{route}/breaker", s.routeBreaker)
	s.page("POST /ui/routes/{route}/{action}", s.routeAction)
	s.page("GET /ui/runs", s.runs)
	s.page("GET /ui/audit", s.audit)
	s.mux.HandleFunc("/ui/", func(w http.ResponseWriter, r *http.Request) {
		s.fail(w, r, nil, http.StatusNotFound, "There is no such page.")
	})
	return s, nil
}

// filesOnly serves the console's static files and no directory: a listing would tell a
// caller who is not signed in what the console is made of.
type filesOnly struct{ fs.FS }

func (f filesOnly) Open(name string) (fs.File, error) {
	file, err := f.FS.Open(name)
	if err != nil {
		return nil, err
	}
	if st, err := file.Stat(); err != nil || st.IsDir() {
		_ = file.Close()
		return nil, fs.ErrNotExist
	}
	return file, nil
}

// hsts keeps browsers on https for two years once they reached the console over it.
const hsts = "max-age=63072000; includeSubDomains"

// ServeHTTP implements http.Handler; every answer carries the security headers.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "+
		"connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
	if s.sessions.jar.secure(r) {
		h.Set("Strict-Transport-Security", hsts)
	}
	if !s.readForm(w, r) {
		return
	}
	s.mux.ServeHTTP(w, r)
}

// pageFunc serves a signed-in request.
type pageFunc func(w http.ResponseWriter, r *http.Request, sess *session)

// page registers a handler that needs a session, and a valid CSRF token unless it only
// reads. Without a session a GET goes to the sign-in page and anything else is refused.
func (s *Server) page(pattern string, fn pageFunc) {
	s.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		sess := s.sessions.fromRequest(r)
		if sess == nil {
			if r.Method == http.MethodGet {
				http.Redirect(w, r, "/ui/login", http.StatusSeeOther)
				return
			}
			s.fail(w, r, nil, http.StatusUnauthorized, "Sign in first.")
			return
		}
		if r.Method != http.MethodGet && !sess.checkCSRF(r) {
			s.log.Info().Str("actor", sess.principal.Name).Str("method", r.Method).Str("path", r.URL.Path).
				Msg("console: state change without a valid CSRF token refused")
			s.fail(w, r, sess, http.StatusForbidden, "This form is stale or was not sent by the console; reload the page and try again.")
			return
		}
		fn(w, r, sess)
	})
}
