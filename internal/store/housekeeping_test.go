package store_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/store"
	"github.com/dlqops/dlq/internal/store/storetest"
)

// Retention deletes, per table, what is older than its age and nothing else: parked and
// scheduled records stay whatever their age, a run holding the newest ledger row of a
// partition stays, idle runs go after their own (short) age, unfinished jobs stay.
func TestPurgeOld(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, clock := storetest.NewClocked(t)
	actor := store.Actor{Name: "alice"}

	_, err := s.StoreBatch(ctx, append(parked("dlq.a", 0, 3), scheduled("dlq.a", 3, 1, clock.Now().Add(time.Hour))...), nil)
	require.NoError(t, err)
	page, err := s.List(ctx, store.Filter{Statuses: []store.Status{store.StatusParked}}, "", 10)
	require.NoError(t, err)
	_, err = s.Discard(ctx, page.Records[0].ID, actor) // finished long ago: purged
	require.NoError(t, err)
	run := func(ledger ...int64) store.Run {
		r, err := s.BeginRun(ctx, "orders", "w1")
		require.NoError(t, err)
		if len(ledger) > 0 {
			require.NoError(t, s.RecordLedger(ctx, store.LedgerEntry{RunID: r.ID, Topic: "dlq.a", Partition: 0, From: ledger[0], To: ledger[1], Redriven: ledger[1] - ledger[0]}))
		}
		require.NoError(t, s.EndRun(ctx, store.RunEnd{ID: r.ID, Status: store.RunSucceeded}))
		return r
	}
	superseded := run(0, 10)
	run() // idle, old: purged
	old, err := s.CreateJob(ctx, store.JobSpec{Kind: store.JobDiscard, RecordIDs: []int64{page.Records[1].ID}}, actor)
	require.NoError(t, err)
	_, err = s.CancelJob(ctx, old.ID, actor) // finished long ago: purged
	require.NoError(t, err)
	pending, err := s.CreateJob(ctx, store.JobSpec{Kind: store.JobDiscard, RecordIDs: []int64{page.Records[1].ID}}, actor)
	require.NoError(t, err)
	clock.Advance(2 * time.Hour)
	newest := run(10, 20) // old, but the newest ledger row of dlq.a/0: kept
	clock.Advance(46 * time.Hour)
	young := run() // idle, younger than idle_runs: kept
	_, err = s.Discard(ctx, page.Records[1].ID, actor)
	require.NoError(t, err)
	clock.Advance(30 * time.Minute)

	purged := map[string]int64{}
	r := store.Retention{Records: 24 * time.Hour, Runs: 24 * time.Hour, IdleRuns: time.Hour, Jobs: 24 * time.Hour, Audit: 24 * time.Hour}
	require.NoError(t, s.PurgeOld(ctx, r, func(table string, rows int64) { purged[table] += rows }))

	require.Equal(t, map[string]int64{store.TableDeadLetters: 1, store.TableRuns: 2, store.TableJobs: 1, store.TableAudit: 4}, purged)
	_, err = s.Get(ctx, page.Records[0].ID)
	require.ErrorIs(t, err, store.ErrNotFound)
	n, err := s.Count(ctx, store.Filter{})
	require.NoError(t, err)
	require.EqualValues(t, 3, n, "parked, scheduled and the young discarded row stay")
	runs, err := s.ListRuns(ctx, "", 10)
	require.NoError(t, err)
	var ids []int64
	for _, r := range runs {
		ids = append(ids, r.ID)
	}
	require.Equal(t, []int64{young.ID, newest.ID}, ids, "run %d is superseded", superseded.ID)
	_, err = s.GetJob(ctx, old.ID)
	require.ErrorIs(t, err, store.ErrNotFound)
	_, err = s.GetJob(ctx, pending.ID)
	require.NoError(t, err, "an unfinished job stays")
	audit, err := s.ListAudit(ctx, 0, 10)
	require.NoError(t, err)
	require.Len(t, audit, 1, "only the young discard's audit row")

	clear(purged)
	require.NoError(t, s.PurgeOld(ctx, r, func(table string, rows int64) { purged[table] += rows }))
	require.Empty(t, purged, "nothing left to purge")
	require.NoError(t, s.PurgeOld(ctx, store.Retention{}, func(string, int64) { t.Fatal("zero ages keep everything") }))
}

// Ledger retention deletes the gaps recorded before its age and the positions nobody
// advanced or touched within it; a position a worker touched (it holds the partition,
// idle) stays, and a touch within the freshness window writes nothing.
func TestPurgeOldLedger(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, clock := storetest.NewClocked(t)
	gap := func(from int64) store.Gap {
		return store.Gap{Group: "g", Route: "r", Topic: "dlq", Partition: 0, From: from, To: from + 5, Cause: store.GapJump, Lost: true}
	}
	require.NoError(t, s.RecordGap(ctx, gap(0)))
	require.NoError(t, s.AdvanceLedgerPositions(ctx, "g", []store.Coordinates{{Topic: "dlq", Partition: 0, Offset: 10},
		{Topic: "dlq", Partition: 1, Offset: 10}, {Topic: "gone", Partition: 0, Offset: 3}}))
	clock.Advance(20 * 24 * time.Hour)
	require.NoError(t, s.RecordGap(ctx, gap(5)))
	require.NoError(t, s.AdvanceLedgerPositions(ctx, "g", []store.Coordinates{{Topic: "dlq", Partition: 0, Offset: 20}}))
	// dlq/1 is held but idle: its worker touches it; "gone" is held by nobody.
	require.NoError(t, s.TouchLedgerPositions(ctx, "g", []store.Coordinates{{Topic: "dlq", Partition: 1}}, 24*time.Hour))
	clock.Advance(15 * 24 * time.Hour)

	purged := map[string]int64{}
	require.NoError(t, s.PurgeOld(ctx, store.Retention{Ledger: 30 * 24 * time.Hour}, func(table string, rows int64) { purged[table] += rows }))

	require.Equal(t, map[string]int64{store.TableGaps: 1, store.TablePositions: 1}, purged)
	gaps, err := s.LedgerGaps(ctx, "g", "dlq")
	require.NoError(t, err)
	require.Len(t, gaps, 1)
	require.EqualValues(t, 5, gaps[0].From, "the young gap stays")
	pos, err := s.LedgerPositions(ctx, "g")
	require.NoError(t, err)
	require.ElementsMatch(t, []store.Coordinates{{Topic: "dlq", Partition: 0, Offset: 20}, {Topic: "dlq", Partition: 1, Offset: 10}}, pos,
		"advanced and touched positions stay; the one nobody holds goes")

	// A touch within the freshness window writes nothing: dlq/0, advanced 15 days ago,
	// keeps that time and goes 20 days later with the rest.
	require.NoError(t, s.TouchLedgerPositions(ctx, "g", []store.Coordinates{{Topic: "dlq", Partition: 0}}, 30*24*time.Hour))
	clock.Advance(20 * 24 * time.Hour)
	clear(purged)
	require.NoError(t, s.PurgeOld(ctx, store.Retention{Ledger: 30 * 24 * time.Hour}, func(table string, rows int64) { purged[table] += rows }))
	require.Equal(t, map[string]int64{store.TableGaps: 1, store.TablePositions: 2}, purged)
}

// One instance at a time leads: a second one asking while the first holds the lock does
// not run, and asks successfully once the first is done.
func TestWhileLeading(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, url := storetest.NewWithURL(t)
	other, err := store.Open(ctx, url)
	require.NoError(t, err)
	t.Cleanup(other.Close)

	var wg sync.WaitGroup
	inside, release := make(chan struct{}), make(chan struct{})
	wg.Go(func() {
		led, err := s.WhileLeading(ctx, func(context.Context) error {
			close(inside)
			<-release
			return nil
		})
		require.NoError(t, err)
		require.True(t, led)
	})
	<-inside
	led, err := other.WhileLeading(ctx, func(context.Context) error { t.Fatal("two leaders"); return nil })
	require.NoError(t, err)
	require.False(t, led)
	close(release)
	wg.Wait()
	ran := false
	led, err = other.WhileLeading(ctx, func(context.Context) error { ran = true; return nil })
	require.NoError(t, err)
	require.True(t, led && ran)
}

func TestBacklog(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := storetest.New(t)
	recs := append(parked("dlq.a", 0, 3), scheduled("dlq.a", 3, 2, time.Now().Add(time.Hour))...)
	recs[0].Route, recs[0].Reason = "payments", store.ReasonUnroutable
	_, err := s.StoreBatch(ctx, recs, nil)
	require.NoError(t, err)
	page, err := s.List(ctx, store.Filter{Statuses: []store.Status{store.StatusParked}}, "", 10)
	require.NoError(t, err)
	_, err = s.Discard(ctx, page.Records[0].ID, store.Actor{Name: "alice"})
	require.NoError(t, err)

	got, err := s.Backlog(ctx)

	require.NoError(t, err)
	require.ElementsMatch(t, []store.BacklogCount{
		{Route: "payments", Status: store.StatusParked, Reason: store.ReasonUnroutable, Count: 1},
		{Route: "orders", Status: store.StatusParked, Reason: store.ReasonExhausted, Count: 1},
		{Route: "orders", Status: store.StatusScheduled, Reason: store.ReasonBackoff, Count: 2},
	}, got)
}
