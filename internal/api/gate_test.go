package api

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A freed place goes to the waiting caller holding the fewest, before the callers that
// already hold places and queued first; a waiter whose request ends leaves the queue.
func TestFairGateServesTheLeastServedFirst(t *testing.T) {
	g := newFairGate(2)
	ctx := context.Background()
	require.NoError(t, g.enter(ctx, "busy"))
	require.NoError(t, g.enter(ctx, "busy"))
	order := make(chan string, 4)
	wait := func(caller string) {
		go func() {
			if g.enter(ctx, caller) == nil {
				order <- caller
			}
		}()
	}
	queued := func(n int) {
		require.Eventually(t, func() bool {
			g.mu.Lock()
			defer g.mu.Unlock()
			return len(g.waiting) == n
		}, 10*time.Second, time.Millisecond)
	}
	wait("busy")
	queued(1)
	wait("busy")
	queued(2)
	gone, cancel := context.WithCancel(ctx)
	left := make(chan error)
	go func() { left <- g.enter(gone, "left") }()
	queued(3)
	cancel()
	require.ErrorIs(t, <-left, context.Canceled)
	queued(2)
	wait("quiet")
	queued(3)

	g.leave("busy")
	require.Equal(t, "quiet", <-order, "the caller holding nothing goes first")
	g.leave("busy")
	require.Equal(t, "busy", <-order)
	g.leave("quiet")
	require.Equal(t, "busy", <-order)
	g.leave("busy")
	g.leave("busy")
	g.mu.Lock()
	defer g.mu.Unlock()
	require.Zero(t, g.total)
	require.Empty(t, g.held)
}
