package api_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/api"
	"github.com/dlqops/dlq/internal/store"
)

// An operator forces a route's breaker open or closed and gives it back to auto; each
// change is audited with the operator and the reason, and the route listing carries the
// override and the state a worker reported. A viewer, a token limited to topics, a route
// no worker registered, an unknown mode and a missing reason are refused, and change nothing.
func TestRouteBreakerOverride(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	require.NoError(t, b.store.RegisterRoutes(ctx, []string{"orders-route"}, "dlq-worker/w1"))
	const at = "/v1/routes/orders-route/breaker"
	open := api.BreakerRequest{Mode: api.BreakerRequestModeOpen, Reason: "payments API maintenance"}

	refused := map[string]response{
		"viewer":          b.do("POST", at, viewerToken, open),
		"scoped":          b.do("POST", at, scopedToken, open),
		"unknown route":   b.do("POST", "/v1/routes/nosuch/breaker", operatorToken, open),
		"unknown mode":    b.do("POST", at, operatorToken, map[string]string{"mode": "half_open", "reason": "x"}),
		"no reason":       b.do("POST", at, operatorToken, map[string]string{"mode": "open"}),
		"blank reason":    b.do("POST", at, operatorToken, api.BreakerRequest{Mode: api.BreakerRequestModeOpen, Reason: "  "}),
		"no body":         b.do("POST", at, operatorToken, nil),
		"an unknown key":  b.do("POST", at, operatorToken, map[string]string{"mode": "open", "reason": "x", "route": "other"}),
		"a forged status": b.do("POST", at, operatorToken, map[string]string{"mode": "forced_open", "reason": "x"}),
	}
	want := map[string]int{"viewer": http.StatusForbidden, "scoped": http.StatusForbidden, "unknown route": http.StatusNotFound}
	for name, r := range refused {
		status, ok := want[name]
		if !ok {
			status = http.StatusBadRequest
		}
		require.Equal(t, status, r.status, "%s: %s", name, r.body)
	}
	var routes api.RouteList
	b.do("GET", "/v1/routes", viewerToken, nil).decode(t, &routes)
	require.Len(t, routes.Routes, 1)
	require.Empty(t, routes.Routes[0].BreakerOverride, "a refused request changed nothing")
	require.Nil(t, routes.Routes[0].Breaker, "no worker reported the breaker yet")

	var rc api.RouteControl
	r := b.do("POST", at, operatorToken, open)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	r.decode(t, &rc)
	require.Equal(t, store.BreakerForceOpen, rc.BreakerOverride)
	require.Equal(t, "payments API maintenance", rc.BreakerOverrideReason)

	since := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	require.NoError(t, b.store.ReportBreaker(ctx, "orders-route", store.BreakerReport{State: "forced_open", Since: since,
		ReturnedRatio: 0.75, ReportedBy: "w1"}))
	b.do("GET", "/v1/routes", viewerToken, nil).decode(t, &routes)
	require.Equal(t, &api.BreakerState{State: api.BreakerStateStateForcedOpen, Since: since, ReturnedRatio: 0.75, ReportedBy: "w1"},
		routes.Routes[0].Breaker)
	require.Equal(t, store.BreakerForceOpen, routes.Routes[0].BreakerOverride)

	b.do("POST", at, operatorToken, api.BreakerRequest{Mode: api.BreakerRequestModeClosed, Reason: "let the flood through"}).decode(t, &rc)
	require.Equal(t, store.BreakerForceClosed, rc.BreakerOverride)
	var auto api.RouteControl
	b.do("POST", at, operatorToken, api.BreakerRequest{Mode: api.BreakerRequestModeAuto, Reason: "maintenance over"}).decode(t, &auto)
	require.Empty(t, auto.BreakerOverride)
	require.Empty(t, auto.BreakerOverrideReason)

	var audit api.AuditList
	b.do("GET", "/v1/audit?route=orders-route", viewerToken, nil).decode(t, &audit)
	var got []string
	for _, e := range audit.Entries {
		if e.Outcome == "ok" {
			got = append(got, e.Actor+":"+e.Action+":"+e.Reason)
		}
	}
	require.Equal(t, []string{"otto:breaker_auto:maintenance over", "otto:breaker_force_closed:let the flood through",
		"otto:breaker_force_open:payments API maintenance"}, got)
}
