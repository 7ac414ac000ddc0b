package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/store"
	"github.com/dlqops/dlq/internal/store/storetest"
)

// A replay's lease lives in replay_leases, not in the record's row: leasing leaves a
// parked row's version untouched, yet every reader sees the record replaying (get, list,
// count, stats, backlog, the oldest parked), no redrive claims a leased scheduled record
// and no operator discards one. Finishing changes the row once, to replayed with its
// job, replay id and produced position; aborting leaves it where it was.
func TestReplayLeaseLeavesTheRowAlone(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := storetest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	s, url := storetest.NewWithURL(t, store.WithClock(clock.Now))
	pool, err := pgxpool.New(ctx, url)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	ada := store.Actor{Name: "ada"}
	due := clock.Now().Add(-time.Minute)
	_, err = s.StoreBatch(ctx, append(parked("dlq.lease", 0, 3), scheduled("dlq.lease", 3, 1, due)...), nil)
	require.NoError(t, err)
	_, err = s.StoreBatch(ctx, parked("dlq.other", 0, 1), nil) // id 5, never leased
	require.NoError(t, err)
	job, _, err := s.SubmitJob(ctx, store.JobRequest{JobSpec: store.JobSpec{Kind: store.JobReplay,
		Filter: &store.Filter{DLQTopic: "dlq.lease"}}}, ada)
	require.NoError(t, err)
	_, err = s.ClaimJob(ctx, "w1", time.Minute)
	require.NoError(t, err)
	version := func(id int64) string {
		var v string
		require.NoError(t, pool.QueryRow(ctx, `SELECT xmin::text FROM dead_letters WHERE id = $1`, id).Scan(&v))
		return v
	}
	before := version(1)

	leased, err := s.BeginReplays(ctx, job.ID, []int64{1, 2, 3, 4}, "w1", time.Minute, ada)
	require.NoError(t, err)
	require.Len(t, leased, 4)
	require.Equal(t, before, version(1), "leasing a parked record writes no new version of its row")
	for id := int64(1); id <= 4; id++ {
		rec, err := s.Get(ctx, id)
		require.NoError(t, err)
		require.Equal(t, store.StatusReplaying, rec.Status, "record %d", id)
		require.Equal(t, job.ID, rec.JobID)
		require.Equal(t, leased[id], rec.ReplayID)
		require.Equal(t, "w1", rec.LeaseOwner)
	}
	n, err := s.Count(ctx, store.Filter{Statuses: []store.Status{store.StatusReplaying}})
	require.NoError(t, err)
	require.EqualValues(t, 4, n)
	page, err := s.List(ctx, store.Filter{Statuses: []store.Status{store.StatusParked}}, "", 10)
	require.NoError(t, err)
	require.Len(t, page.Records, 1, "only the record no replay holds is parked")
	require.EqualValues(t, 5, page.Records[0].ID)
	n, err = s.Count(ctx, store.Filter{Statuses: []store.Status{store.StatusParked, store.StatusReplaying}})
	require.NoError(t, err)
	require.EqualValues(t, 5, n)
	st, err := s.Stats(ctx)
	require.NoError(t, err)
	byStatus := map[store.Status]int64{}
	for _, c := range st.Counts {
		byStatus[c.Status] += c.Count
	}
	require.Equal(t, map[store.Status]int64{store.StatusReplaying: 4, store.StatusParked: 1}, byStatus)
	backlog, err := s.Backlog(ctx)
	require.NoError(t, err)
	require.Len(t, backlog, 1)
	require.EqualValues(t, 1, backlog[0].Count)
	claim, err := s.ClaimDue(ctx, "", "redrive", 10, time.Minute)
	require.NoError(t, err)
	require.Empty(t, claim.Records, "a scheduled record a replay holds is not redriven")
	_, err = s.DiscardRecord(ctx, 2, "no", ada)
	require.ErrorIs(t, err, store.ErrConflict, "a record a replay holds is not discarded")
	_, err = s.RetryNow(ctx, 4, ada)
	require.ErrorIs(t, err, store.ErrConflict)

	done, err := s.FinishReplays(ctx, job.ID, "w1", []store.Redriven{
		{ID: 1, Produced: store.Coordinates{Topic: "orders", Partition: 2, Offset: 70}},
		{ID: 2, Produced: store.Coordinates{Topic: "orders", Partition: 0, Offset: 71}},
	}, ada)
	require.NoError(t, err)
	require.Equal(t, 2, done)
	rec, err := s.Get(ctx, 1)
	require.NoError(t, err)
	require.Equal(t, store.StatusReplayed, rec.Status)
	require.Equal(t, &store.Coordinates{Topic: "orders", Partition: 2, Offset: 70}, rec.Produced)
	require.Equal(t, job.ID, rec.JobID)
	require.Equal(t, leased[1], rec.ReplayID)
	require.Empty(t, rec.LeaseOwner)

	aborted, err := s.AbortReplays(ctx, job.ID, "w1", []int64{3, 4}, "", ada)
	require.NoError(t, err)
	require.Equal(t, 2, aborted)
	rec, err = s.Get(ctx, 4)
	require.NoError(t, err)
	require.Equal(t, store.StatusScheduled, rec.Status, "back where it was")
	require.Equal(t, due, rec.DueAt)
	require.Empty(t, rec.LeaseOwner)
	claim, err = s.ClaimDue(ctx, "", "redrive", 10, time.Minute)
	require.NoError(t, err)
	require.Len(t, claim.Records, 1, "the returned scheduled record is redriven again")
	n, err = s.Count(ctx, store.Filter{Statuses: []store.Status{store.StatusReplaying}})
	require.NoError(t, err)
	require.Zero(t, n)
}
