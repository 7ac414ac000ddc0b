package main

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/fingerprint"
	"github.com/dlqops/dlq/internal/jobs/jobstest"
	"github.com/dlqops/dlq/internal/store"
)

// dlq-admin incidents lists the causes, largest first, with attacker text unable to drive
// the terminal; its fingerprint discards one incident with the usual dry run and confirm.
func TestIncidentsCommandAndBulkByFingerprint(t *testing.T) {
	t.Parallel()
	s := newStack(t, []string{"orders"})
	ctx := context.Background()
	jobstest.Park(t, s.store, "orders", 30)
	evil := make([]store.NewRecord, 4)
	for i := range evil {
		evil[i] = store.NewRecord{DLQ: store.Coordinates{Topic: "orders.evil", Offset: int64(i)},
			Origin: store.Origin{Topic: "orders", Partition: -1, Offset: -1}, RetryCount: 5,
			ErrorClass: "Evil", ErrorMessage: fmt.Sprintf("bad \x1b[2J\x1b[31minput\x1b[0m %d\r\nFAKE ROW", i),
			Reason: store.ReasonExhausted, Status: store.StatusParked, Route: "orders"}
	}
	_, err := s.store.StoreBatch(ctx, evil, nil)
	require.NoError(t, err)
	evilFP := fingerprint.Of("Evil", fingerprint.Template(evil[0].ErrorMessage), "orders")

	out, err := s.cli(t, "incidents")
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 4, out)
	require.Contains(t, lines[0], "FINGERPRINT")
	require.Equal(t, "matching incidents: 2", strings.TrimSpace(lines[3]))
	require.Regexp(t, `^[0-9a-f]{32}\s+30\s+0\s+orders\s+orders\s+Timeout: timed out`, lines[1])
	require.Regexp(t, `^`+evilFP+`\s+4\s+0\s+orders`, lines[2])
	require.NotContains(t, out, "\x1b")
	require.NotContains(t, out, "\r")

	out, err = s.cli(t, "bulk", "discard", "--fingerprint", evilFP, "--reason", "bad producer build")
	require.NoError(t, err)
	require.Contains(t, out, "4 records selected (dry run)")
	_, err = s.cli(t, "bulk", "discard", "--fingerprint", evilFP, "--reason", "bad producer build", "--yes")
	require.NoError(t, err)
	n, err := s.store.Count(ctx, store.Filter{Statuses: []store.Status{store.StatusDiscarded}})
	require.NoError(t, err)
	require.EqualValues(t, 4, n)

	out, err = s.cli(t, "incidents")
	require.NoError(t, err)
	lines = strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 3, out)
	require.Equal(t, "matching incidents: 1", strings.TrimSpace(lines[2]))
	require.NotContains(t, out, evilFP)
}
