package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/store"
	"github.com/dlqops/dlq/internal/store/storetest"
)

func TestRunLedger(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := storetest.New(t)

	run, err := s.BeginRun(ctx, "orders", "worker-1")
	require.NoError(t, err)
	_, err = s.StoreBatch(ctx, parked("dlq.orders", 10, 3), &store.LedgerEntry{
		RunID: run.ID, Topic: "dlq.orders", Partition: 0, From: 0, To: 20, Redriven: 15, Parked: 3, Skipped: 2,
	})
	require.NoError(t, err)
	require.NoError(t, s.RecordLedger(ctx, store.LedgerEntry{RunID: run.ID, Topic: "dlq.orders", Partition: 1, From: 5, To: 9, Redriven: 4}))
	require.NoError(t, s.EndRun(ctx, store.RunEnd{ID: run.ID, Status: store.RunSucceeded}))
	require.ErrorIs(t, s.EndRun(ctx, store.RunEnd{ID: run.ID, Status: store.RunFailed, Error: "again"}), store.ErrConflict)

	// A ledger that fails rolls its batch back: nothing is stored that is not accounted for.
	_, err = s.StoreBatch(ctx, parked("dlq.orders", 100, 1), &store.LedgerEntry{RunID: run.ID, Topic: "dlq.orders", From: 0, To: 1})
	require.ErrorIs(t, err, store.ErrConflict, "the same range twice")
	n, err := s.Count(ctx, store.Filter{})
	require.NoError(t, err)
	require.EqualValues(t, 3, n)

	other, err := s.BeginRun(ctx, "payments", "worker-2")
	require.NoError(t, err)
	runs, err := s.ListRuns(ctx, "orders", 10)
	require.NoError(t, err)
	require.Len(t, runs, 1)
	require.Equal(t, store.RunSucceeded, runs[0].Status)
	require.False(t, runs[0].FinishedAt.IsZero())
	require.Len(t, runs[0].Ledger, 2)
	l := runs[0].Ledger[0]
	require.Equal(t, [4]int64{0, 20, 15, 3}, [4]int64{l.From, l.To, l.Redriven, l.Parked})
	require.Equal(t, l.To-l.From, l.Redriven+l.Scheduled+l.Parked+l.Skipped)

	runs, err = s.ListRuns(ctx, "", 10)
	require.NoError(t, err)
	require.Equal(t, []int64{other.ID, run.ID}, []int64{runs[0].ID, runs[1].ID})
	require.Empty(t, runs[0].Ledger)
}

func TestRouteControls(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, clock := storetest.NewClocked(t)
	ops := store.Actor{Name: "ops"}

	_, err := s.PauseRoute(ctx, "orders", true, ops)
	require.ErrorIs(t, err, store.ErrNotFound, "only routes a worker registered exist")
	all, err := s.RouteControls(ctx)
	require.NoError(t, err)
	require.Empty(t, all, "a refused name leaves no route behind")
	require.NoError(t, s.RegisterRoutes(ctx, []string{"orders", "payments"}, "dlq-worker/w1"))

	rc, err := s.PauseRoute(ctx, "orders", true, ops)
	require.NoError(t, err)
	require.True(t, rc.Paused)
	rc, err = s.RequestRun(ctx, "orders", ops)
	require.NoError(t, err)
	require.True(t, rc.Paused, "a run request keeps the pause")
	requested := rc.RunRequestedAt

	clock.Advance(time.Second)
	_, err = s.RequestRun(ctx, "payments", ops)
	require.NoError(t, err)
	_, err = s.RequestRun(ctx, "orders", ops)
	require.NoError(t, err)
	// The worker acknowledges the request it saw; the newer one survives.
	require.NoError(t, s.AckRunRequest(ctx, "orders", requested))
	all, err = s.RouteControls(ctx)
	require.NoError(t, err)
	require.Len(t, all, 2)
	require.Equal(t, "orders", all[0].Route)
	require.True(t, all[0].RunRequestedAt.Equal(clock.Now()))
	require.NoError(t, s.AckRunRequest(ctx, "orders", all[0].RunRequestedAt))
	_, err = s.PauseRoute(ctx, "orders", false, ops)
	require.NoError(t, err)
	all, err = s.RouteControls(ctx)
	require.NoError(t, err)
	require.False(t, all[0].Paused)
	require.True(t, all[0].RunRequestedAt.IsZero())

	audit, err := s.ListAudit(ctx, 0, 10)
	require.NoError(t, err)
	require.Len(t, audit, 6, "five actions and the refusal")
	require.Equal(t, "resume_route", audit[0].Action)
	require.Equal(t, "orders", audit[0].Route)
	require.Equal(t, "pause_route", audit[5].Action)
	require.Equal(t, "not_found", audit[5].Outcome)
}

// Idle runs of a route are one row whose end moves; a run with work, a failed idle run
// or another route's run are rows of their own, and an idle run after them starts a new
// idle row.
func TestFinishIdleRun(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, clock := storetest.NewClocked(t)
	first := clock.Now()
	idle := func(route string, status store.RunStatus, msg string) {
		t.Helper()
		require.NoError(t, s.FinishIdleRun(ctx, route, "w1", 0, status, msg))
		clock.Advance(time.Minute)
	}
	idle("orders", store.RunSucceeded, "")
	idle("payments", store.RunSucceeded, "") // another route's row does not split orders'
	idle("orders", store.RunSucceeded, "")
	idle("orders", store.RunSucceeded, "")
	runs, err := s.ListRuns(ctx, "orders", 10)
	require.NoError(t, err)
	require.Len(t, runs, 1, "three idle runs, one row")
	require.Equal(t, store.RunSucceeded, runs[0].Status)
	require.Equal(t, first, runs[0].StartedAt, "from the first idle run")
	require.Equal(t, first.Add(3*time.Minute), runs[0].FinishedAt, "to the end of the last")

	work, err := s.BeginRun(ctx, "orders", "w1")
	require.NoError(t, err)
	require.NoError(t, s.EndRun(ctx, store.RunEnd{ID: work.ID, Status: store.RunSucceeded}))
	idle("orders", store.RunSucceeded, "")
	idle("orders", store.RunFailed, "topics match no partition: dlq.typo")
	idle("orders", store.RunFailed, "topics match no partition: dlq.typo")
	idle("orders", store.RunSucceeded, "")
	idle("orders", store.RunSucceeded, "")
	runs, err = s.ListRuns(ctx, "orders", 10)
	require.NoError(t, err)
	var got []store.RunStatus
	for _, r := range runs {
		got = append(got, r.Status)
	}
	require.Equal(t, []store.RunStatus{store.RunSucceeded, store.RunFailed, store.RunFailed, store.RunSucceeded, store.RunSucceeded, store.RunSucceeded}, got,
		"newest first: idle, two failures, idle, the run with work, the first idle row")
	require.Equal(t, "topics match no partition: dlq.typo", runs[1].Error)
	require.Equal(t, work.ID, runs[4].ID)
}

// A run's end writes its positions, its ledger rows and its finish together; a row
// already recorded is kept, and a run that is not running any more is a conflict whose
// positions and ledger rows are written all the same.
func TestEndRunWritesPositionsLedgerAndFinish(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := storetest.New(t)
	run, err := s.BeginRun(ctx, "orders", "worker-1")
	require.NoError(t, err)
	require.NoError(t, s.RecordLedger(ctx, store.LedgerEntry{RunID: run.ID, Topic: "dlq", Partition: 0, From: 0, To: 5, Redriven: 5}))

	require.NoError(t, s.EndRun(ctx, store.RunEnd{ID: run.ID, Status: store.RunFailed, Error: "partly", Group: "g",
		Positions: []store.Coordinates{{Topic: "dlq", Partition: 0, Offset: 5}, {Topic: "dlq", Partition: 1, Offset: 9}},
		Ledger: []store.LedgerEntry{
			{Topic: "dlq", Partition: 0, From: 0, To: 5, Redriven: 1, Skipped: 4}, // recorded already: kept as it was
			{Topic: "dlq", Partition: 1, From: 2, To: 9, Redriven: 7},
		}}))

	runs, err := s.ListRuns(ctx, "orders", 1)
	require.NoError(t, err)
	require.Len(t, runs, 1)
	require.Equal(t, store.RunFailed, runs[0].Status)
	require.Equal(t, "partly", runs[0].Error)
	require.False(t, runs[0].FinishedAt.IsZero())
	require.Len(t, runs[0].Ledger, 2)
	for _, l := range runs[0].Ledger {
		require.Equal(t, map[int32][2]int64{0: {5, 0}, 1: {7, 0}}[l.Partition], [2]int64{l.Redriven, l.Skipped}, "partition %d", l.Partition)
	}
	pos, err := s.LedgerPositions(ctx, "g")
	require.NoError(t, err)
	require.ElementsMatch(t, []store.Coordinates{{Topic: "dlq", Partition: 0, Offset: 5}, {Topic: "dlq", Partition: 1, Offset: 9}}, pos)

	err = s.EndRun(ctx, store.RunEnd{ID: run.ID, Status: store.RunSucceeded, Group: "g",
		Positions: []store.Coordinates{{Topic: "dlq", Partition: 1, Offset: 12}},
		Ledger:    []store.LedgerEntry{{Topic: "dlq", Partition: 1, From: 9, To: 12, Redriven: 3}}})
	require.ErrorIs(t, err, store.ErrConflict, "ended twice")
	runs, err = s.ListRuns(ctx, "orders", 1)
	require.NoError(t, err)
	require.Equal(t, store.RunFailed, runs[0].Status, "the first end stays")
	require.Len(t, runs[0].Ledger, 3)
	pos, err = s.LedgerPositions(ctx, "g")
	require.NoError(t, err)
	require.Contains(t, pos, store.Coordinates{Topic: "dlq", Partition: 1, Offset: 12})

	require.Error(t, s.EndRun(ctx, store.RunEnd{ID: run.ID, Status: store.RunSucceeded,
		Ledger: []store.LedgerEntry{{Topic: "dlq", From: 3, To: 2}}}), "a range upside down")
}
