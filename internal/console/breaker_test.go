package console_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/store"
)

// The breaker banner in headless Chromium: when a route's breaker is open, the overview
// and the routes page say so (since when, how much came back) with the operator's
// buttons; forcing it closed, forcing it open with a reason (shown as text, never
// markup) and giving it back to automatic each reach PostgreSQL and the audit log. A
// viewer sees the banner without buttons; a token scoped to topics sees no routes.
func TestBreakerBanner(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	since := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	require.NoError(t, e.store.ReportBreaker(ctx, e.routeName, store.BreakerReport{State: "open", Since: since,
		ReturnedRatio: 0.9, ReportedBy: "worker-1"}))
	banner := fmt.Sprintf(`.breaker-banner[data-route=%q]`, e.routeName)
	override := func() (store.BreakerOverride, string) {
		rcs, err := e.store.RouteControls(ctx)
		require.NoError(t, err)
		for _, rc := range rcs {
			if rc.Route == e.routeName {
				return rc.BreakerOverride, rc.BreakerOverrideReason
			}
		}
		t.Fatalf("route %s not registered", e.routeName)
		return "", ""
	}

	tab := e.tab(t)
	e.signIn(t, tab, operatorToken)
	visit(t, tab, e.url+"/ui/", banner)
	msg := text(t, tab, banner)
	require.Contains(t, msg, "Breaker open on route "+e.routeName+" since 2026-03-01 12:00:00Z")
	require.Contains(t, msg, "90% of what it redrove came back")
	e.shot(t, tab, "breaker-overview")
	visit(t, tab, e.url+"/ui/routes", banner)
	require.Contains(t, text(t, tab, banner), "90% of what it redrove came back", "the routes page shows it too")

	// Force closed from the banner: the banner goes, the override is in PostgreSQL.
	do(t, tab, chromedp.SendKeys(banner+" .breaker-reason", "the flood is a load test"))
	submit(t, tab, banner+" button.breaker-closed", "#flash")
	require.Contains(t, text(t, tab, "#flash"), "Breaker forced closed")
	o, why := override()
	require.Equal(t, store.BreakerForceClosed, o)
	require.Equal(t, "the flood is a load test", why)
	require.Equal(t, 0, eval[int](t, tab, `document.querySelectorAll(".breaker-banner").length`), "a breaker forced closed holds nothing")

	// Force open from the route's row, with a reason that is markup: shown as text.
	row := fmt.Sprintf(`tr.route-row[data-route=%q]`, e.routeName)
	do(t, tab, chromedp.SetValue(row+" select.breaker-mode", "open"), chromedp.SendKeys(row+" .breaker-reason", hostileError))
	submit(t, tab, row+" button.breaker-set", banner)
	require.Contains(t, text(t, tab, banner), "Breaker forced open")
	require.Equal(t, hostileError, text(t, tab, banner+" q.reason"), "the reason is text, not markup")
	require.Equal(t, "undefined", eval[string](t, tab, `typeof window.__pwned`))
	require.Equal(t, 0, eval[int](t, tab, `document.querySelectorAll(".breaker-banner script, .breaker-banner img").length`))
	e.shot(t, tab, "breaker-forced-open")
	o, _ = override()
	require.Equal(t, store.BreakerForceOpen, o)

	// A viewer sees the banner, without buttons; a scoped token sees no routes at all.
	viewer := e.tab(t)
	e.signIn(t, viewer, viewerToken)
	visit(t, viewer, e.url+"/ui/", banner)
	require.Equal(t, 0, eval[int](t, viewer, `document.querySelectorAll(".breaker-banner form, .breaker-row-form").length`))
	scoped := e.tab(t)
	e.signIn(t, scoped, scopedToken)
	visit(t, scoped, e.url+"/ui/", "#top-incidents")
	require.Equal(t, 0, eval[int](t, scoped, `document.querySelectorAll(".breaker-banner").length`))

	// Back to automatic: the override is gone; the worker's last report (open) shows again.
	visit(t, tab, e.url+"/ui/", banner)
	do(t, tab, chromedp.SendKeys(banner+" .breaker-reason", "maintenance over"))
	submit(t, tab, banner+" button.breaker-auto", "#flash")
	o, _ = override()
	require.Equal(t, store.BreakerAuto, o)

	entries, err := e.store.SearchAudit(ctx, store.AuditFilter{Route: e.routeName}, 0, 100)
	require.NoError(t, err)
	var got []string
	for _, a := range entries {
		got = append(got, a.Actor+":"+a.Action)
	}
	require.Subset(t, got, []string{"otto:breaker_force_closed", "otto:breaker_force_open", "otto:breaker_auto"})
}
