package api

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"golang.org/x/time/rate"

	"github.com/dlqops/dlq/internal/store"
)

// auditTimeout bounds the write of a refusal's audit row, which outlives a client that
// went away.
const auditTimeout = 5 * time.Second

// refusalOutcomes name the audit outcome of each refused status.
var refusalOutcomes = map[int]string{
	http.StatusBadRequest:            "invalid",
	http.StatusUnauthorized:          "unauthorized",
	http.StatusForbidden:             "forbidden",
	http.StatusNotFound:              "not_found",
	http.StatusConflict:              "conflict",
	http.StatusRequestEntityTooLarge: "too_large",
	http.StatusUnprocessableEntity:   "target_refused",
	http.StatusTooManyRequests:       "rate_limited",
}

// audited reports whether a refused request gets an audit row: every 401, 403 and 429,
// a 404 for an object outside the token's topics, and every refused mutation, unless the
// store already wrote the row in its own transaction.
func audited(rt Route, status int, err error) bool {
	if _, ok := refusalOutcomes[status]; !ok || store.IsAuditedRefusal(err) {
		return false
	}
	switch {
	case status == http.StatusUnauthorized || status == http.StatusForbidden || status == http.StatusTooManyRequests:
		return true
	case errors.Is(err, errOutOfScope):
		return true
	}
	return rt.Method != http.MethodGet
}

// refusalAudit writes the audit rows of refused requests and console sign-ins, each on
// its own, outside the transaction a refusal rolled back. Safe from any request's
// goroutine: the limiter and the windows lock, the rest is only read.
type refusalAudit struct {
	clock     func() time.Time
	store     *store.Store
	log       zerolog.Logger
	unaudited prometheus.Counter
	// anonAudit limits the audit rows of refused requests without a valid token.
	anonAudit *rate.Limiter
	// refusals folds repeated refusals of one caller into few audit rows.
	refusals *refusalWindows
}

// auditRefusal writes the audit row of a refused request on its own, outside the
// transaction the refusal rolled back. Rows for callers without a valid token are rate
// limited; the ones beyond the limit are only counted.
func (s *refusalAudit) auditRefusal(c *call, rt Route, status int, err error) {
	anonymous := c.principal.Name == ""
	if anonymous && !s.anonAudit.AllowN(s.clock(), 1) {
		s.unaudited.Inc()
		return
	}
	e := store.AuditEntry{At: s.clock().UTC(), Actor: c.actor.Name, Action: rt.Method + " " + rt.Path,
		Outcome: refusalOutcomes[status], RequestID: c.actor.RequestID, ClientRequestID: c.actor.ClientRequestID}
	var p *Problem
	if errors.As(err, &p) {
		e.Reason = p.Detail
		if p.outcome != "" {
			e.Outcome = p.outcome
		}
	}
	if !anonymous {
		// The object the request named, so that the row is listed with its topics.
		if id, err := strconv.ParseInt(c.r.PathValue("id"), 10, 64); err == nil && id > 0 {
			if strings.HasPrefix(rt.Path, "/v1/jobs/") {
				e.JobID = id
			} else {
				e.RecordIDs = []int64{id}
			}
		}
		if route := c.r.PathValue("route"); text("route", route) == nil && len(route) <= 200 {
			e.Route = route
		}
	}
	if status == http.StatusTooManyRequests {
		// A caller refused for its rate keeps being refused as fast as it sends: one row
		// per caller and window, with the count, so that it cannot grow the audit log.
		if !s.refusals.add("token\x00"+c.principal.Name, e, nil) {
			s.unaudited.Inc()
		}
		return
	}
	s.writeAudit(e)
}
