package console

import (
	"net/http"
	"net/url"
	"time"

	"github.com/dlqops/dlq/internal/api"
	"github.com/dlqops/dlq/internal/store"
)

// breakerBanner is a route whose breaker holds its records: open, probing or forced open.
type breakerBanner struct {
	Route string
	// State is as the worker reported it; "" when an operator forced it open and no worker
	// reported since.
	State           string
	Since           *time.Time
	ReturnedPercent int
	Override        store.BreakerOverride
	Reason          string
}

// breakerBanners are the routes whose breaker is open, half-open or forced open.
func breakerBanners(rcs []api.RouteControl) []breakerBanner {
	var out []breakerBanner
	for _, rc := range rcs {
		b := breakerBanner{Route: rc.Route, Override: rc.BreakerOverride, Reason: rc.BreakerOverrideReason}
		if rep := rc.Breaker; rep != nil {
			since := rep.Since
			b.State, b.Since, b.ReturnedPercent = string(rep.State), &since, int(100*rep.ReturnedRatio+0.5)
		}
		switch {
		case b.Override == store.BreakerForceOpen:
		case b.Override == store.BreakerAuto && (b.State == "open" || b.State == "half_open"):
		default:
			continue
		}
		out = append(out, b)
	}
	return out
}

var breakerMessages = map[api.BreakerRequestMode]string{
	api.BreakerRequestModeOpen:   "Breaker forced open: the route redrives nothing; its records wait as scheduled.",
	api.BreakerRequestModeClosed: "Breaker forced closed: the route redrives whatever comes back.",
	api.BreakerRequestModeAuto:   "Breaker given back to automatic.",
}

// routeBreaker forces a route's breaker open or closed, or gives it back to auto.
func (s *Server) routeBreaker(w http.ResponseWriter, r *http.Request, sess *session) {
	mode := api.BreakerRequestMode(r.PostFormValue("mode"))
	msg, ok := breakerMessages[mode]
	if !ok {
		s.fail(w, r, sess, http.StatusBadRequest, "A breaker is forced open or closed, or given back to automatic.")
		return
	}
	req := api.BreakerRequest{Mode: mode, Reason: r.PostFormValue("reason")}
	_, err := s.call(r, sess, http.MethodPost, "/v1/routes/"+url.PathEscape(r.PathValue("route"))+"/breaker", nil, req, nil)
	s.actionDone(w, r, sess, "/ui/routes", err, msg)
}
