package main

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/store"
)

// `routes breaker ROUTE open|closed|auto --reason` forces a route's breaker and gives it
// back, audited with the reason; `routes` shows the breaker a worker reported and the
// override. A wrong mode, a missing reason and an unknown route are refused.
func TestCLIRouteBreaker(t *testing.T) {
	t.Parallel()
	s := newStack(t, nil)
	ctx := context.Background()
	require.NoError(t, s.store.RegisterRoutes(ctx, []string{"orders", "payments"}, "worker-1"))

	_, err := s.cli(t, "routes", "breaker", "orders", "half_open", "--reason", "x")
	require.ErrorContains(t, err, "open, closed or auto")
	_, err = s.cli(t, "routes", "breaker", "orders", "open")
	require.ErrorContains(t, err, "--reason is required")
	_, err = s.cli(t, "routes", "breaker", "nosuchroute", "open", "--reason", "x")
	require.ErrorContains(t, err, "404")

	out, err := s.cli(t, "routes", "breaker", "orders", "open", "--reason", "payments API maintenance\x1b[2J")
	require.NoError(t, err)
	require.Regexp(t, `(?m)^breaker of orders: not reported by a worker yet; forced open by an operator: payments API maintenance\x{FFFD}\[2J$`, out,
		"the override and its reason, a control character kept inert")
	require.NoError(t, s.store.ReportBreaker(ctx, "orders", store.BreakerReport{State: "forced_open",
		Since: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC), ReturnedRatio: 0.75, ReportedBy: "worker-1"}))
	out, err = s.cli(t, "routes")
	require.NoError(t, err)
	require.Regexp(t, `(?m)^breaker of orders: forced_open since 2026-03-01T12:00:00Z, 75% of what it redrove came back \(reported by worker-1\); forced open`, out)
	require.NotContains(t, out, "breaker of payments", "a closed automatic breaker is not news")

	out, err = s.cli(t, "routes", "breaker", "orders", "auto", "--reason", "maintenance over")
	require.NoError(t, err)
	require.NotContains(t, out, "forced open by an operator")
	out, err = s.cli(t, "audit", "--route", "orders")
	require.NoError(t, err)
	require.Regexp(t, `(?m)\s+ada\s+breaker_force_open\s`, out)
	require.Regexp(t, `(?m)\s+ada\s+breaker_auto\s`, out)
}
