package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/store"
	"github.com/dlqops/dlq/internal/store/storetest"
)

// The store survives a PostgreSQL restart: while the server is down every call fails with
// a retriable error, and once it is back the same Store works again.
func TestRecoversFromPostgresRestart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, pg := storetest.NewPrivate(t)
	_, err := s.StoreBatch(ctx, parked("dlq.restart", 0, 10), nil)
	require.NoError(t, err)

	pg.Stop()
	_, err = s.StoreBatch(ctx, parked("dlq.restart", 10, 10), nil)
	require.Error(t, err)
	require.True(t, store.IsRetriable(err), "stopped server: %v", err)
	t.Logf("while stopped: %v", err)
	_, err = s.List(ctx, store.Filter{}, "", 10)
	require.True(t, store.IsRetriable(err), "still down: %v", err)

	pg.Start()
	// The first calls may meet connections the restart broke; they too are retriable.
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err = s.StoreBatch(ctx, parked("dlq.restart", 10, 10), nil)
		if err == nil || time.Now().After(deadline) {
			break
		}
		require.True(t, store.IsRetriable(err), "after restart: %v", err)
		t.Logf("after restart: %v", err)
		time.Sleep(100 * time.Millisecond)
	}
	require.NoError(t, err)
	n, err := s.Count(ctx, store.Filter{DLQTopic: "dlq.restart"})
	require.NoError(t, err)
	require.EqualValues(t, 20, n, "nothing lost, nothing doubled")
}
