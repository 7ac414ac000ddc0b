package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/store"
	"github.com/dlqops/dlq/internal/store/storetest"
)

// A position written unflushed does not wait for PostgreSQL's flush and is visible at
// once; FlushLedger waits for it, as every synchronous commit does.
func TestUnflushedPositionsWaitForNoFlush(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, pg := storetest.NewPrivate(t)
	pos := []store.Coordinates{{Topic: "dlq.flush", Partition: 0, Offset: 100}, {Topic: "dlq.flush", Partition: 1, Offset: 7}}

	pg.StallSynchronousCommits()
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	require.NoError(t, s.AdvanceLedgerPositionsUnflushed(wctx, "g", pos), "a synchronous commit waits until the stall ends")
	got, err := s.LedgerPositions(wctx, "g")
	require.NoError(t, err)
	require.ElementsMatch(t, pos, got, "visible before any flush")

	flushed := make(chan error, 1)
	go func() { flushed <- s.FlushLedger(ctx, "g") }()
	conn, err := pgx.Connect(ctx, pg.URL())
	require.NoError(t, err)
	defer conn.Close(ctx)
	require.Eventually(t, func() bool {
		var waiting bool
		err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT FROM pg_stat_activity
			WHERE query LIKE '%INSERT INTO ledger_flushes%' AND wait_event = 'SyncRep')`).Scan(&waiting)
		return err == nil && waiting
	}, time.Minute, 10*time.Millisecond, "the flush waits for the stalled synchronous commit")
	select {
	case err := <-flushed:
		t.Fatalf("the flush returned during the stall: %v", err)
	default:
	}
	pg.ResumeSynchronousCommits()
	require.NoError(t, <-flushed)
}
