package main

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The audit command's time filters reach the server as the times given, offsets included
// (a '+' in a query is a space unless escaped); an id or a time that is not one is refused
// as the flag that gave it.
func TestCLIAuditTimeFilters(t *testing.T) {
	t.Parallel()
	s := newStack(t, nil)
	require.NoError(t, s.store.RegisterRoutes(context.Background(), []string{"orders"}, "worker-1"))
	before := time.Now().Add(-time.Hour)
	_, err := s.cli(t, "pause", "orders")
	require.NoError(t, err)
	after := time.Now().Add(time.Hour)

	east, west := time.FixedZone("east", 2*3600), time.FixedZone("west", -5*3600)
	out, err := s.cli(t, "audit", "--from", before.In(east).Format(time.RFC3339Nano), "--to", after.In(west).Format(time.RFC3339))
	require.NoError(t, err)
	require.Regexp(t, `(?m)\s+ada\s+pause_route\s+\S+\s+route orders\s`, out)
	out, err = s.cli(t, "audit", "--from", after.In(east).Format(time.RFC3339))
	require.NoError(t, err)
	require.NotContains(t, out, "pause_route", "nothing at or after an hour from now")

	_, err = s.cli(t, "audit", "--record", "first")
	require.ErrorContains(t, err, "--record")
	_, err = s.cli(t, "audit", "--job", "1.5")
	require.ErrorContains(t, err, "--job")
	_, err = s.cli(t, "audit", "--to", "2024-01-01")
	require.ErrorContains(t, err, "--to")
}
