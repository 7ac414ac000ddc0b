package main

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/store"
)

// A sender's text (error class and message, the original topic its headers named, a
// header's name) reaches the operator's terminal through list and show: an escape
// sequence in it must not drive the terminal, and a line break in it must not forge a row.
func TestListAndShowKeepSendersTextInert(t *testing.T) {
	t.Parallel()
	s := newStack(t, []string{"orders"})
	ctx := context.Background()
	const evil = "\x1b[2J\x1b]0;owned\x07\r\nFAKE ROW"
	_, err := s.store.StoreBatch(ctx, []store.NewRecord{{
		DLQ:    store.Coordinates{Topic: "orders.dlq", Offset: 7},
		Origin: store.Origin{Topic: "orders" + evil, Partition: -1, Offset: -1}, RetryCount: 5,
		ErrorClass: "Evil" + evil, ErrorMessage: "bad" + evil,
		Headers: []store.Header{{Key: "x-evil" + evil, Value: []byte("v")}, {Key: "dlq-consumer-group", Value: []byte("svc" + evil)}},
		Reason:  store.ReasonExhausted, Status: store.StatusParked, Route: "orders",
	}}, nil)
	require.NoError(t, err)
	stored, err := s.store.ListAfter(ctx, store.Filter{}, 0, 10)
	require.NoError(t, err)
	require.Len(t, stored, 1)

	out, err := s.cli(t, "list")
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 3, "a header row, the record's row and the total only:\n%s", out)
	require.Equal(t, "matching records: 1", lines[2])
	show, err := s.cli(t, "show", strconv.FormatInt(stored[0].ID, 10))
	require.NoError(t, err)
	for _, o := range []string{out, show} {
		require.NotContains(t, o, "\x1b")
		require.NotContains(t, o, "\x07")
		require.NotContains(t, o, "\r")
		require.NotContains(t, o, "\nFAKE ROW")
	}
	require.Contains(t, show, "Evil\uFFFD[2J")
	require.Contains(t, show, "failing group", "show names the group that failed the record")
	require.Contains(t, show, "svc\uFFFD[2J", "as inert text")
}
