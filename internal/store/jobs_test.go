package store_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/store"
	"github.com/dlqops/dlq/internal/store/storetest"
)

func TestJobLifecycle(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, clock := storetest.NewClocked(t)
	alice := store.Actor{Name: "alice", RequestID: "r1"}

	_, err := s.CreateJob(ctx, store.JobSpec{Kind: store.JobReplay}, alice)
	var ve *store.ValidationError
	require.ErrorAs(t, err, &ve, "no selector")

	filter := &store.Filter{OriginalTopic: "orders", Key: []byte{0xff, 0}, StoredFrom: clock.Now()}
	job, err := s.CreateJob(ctx, store.JobSpec{Kind: store.JobReplay, Filter: filter, TargetTopic: "orders.retry",
		ResetRetry: true, RatePerSecond: 50, ConfirmedCount: 12}, alice)
	require.NoError(t, err)
	require.Equal(t, store.JobPending, job.Status)
	got, err := s.GetJob(ctx, job.ID)
	require.NoError(t, err)
	require.Equal(t, filter, got.Filter, "the filter survives its JSON round trip")
	require.Equal(t, job, got)

	// Two instances claim at once: one gets the job.
	var wg sync.WaitGroup
	claims := make([]store.Job, 2)
	errs := make([]error, 2)
	for i := range 2 {
		wg.Go(func() { claims[i], errs[i] = s.ClaimJob(ctx, []string{"w1", "w2"}[i], time.Minute) })
	}
	wg.Wait()
	winner := 0
	if errs[0] != nil {
		winner = 1
	}
	require.ErrorIs(t, errs[1-winner], store.ErrNotFound)
	require.NoError(t, errs[winner])
	owner := claims[winner].LeaseOwner
	require.Equal(t, store.JobRunning, claims[winner].Status)

	require.NoError(t, s.UpdateJobProgress(ctx, job.ID, owner, store.JobProgress{Total: 12, Done: 5, Cursor: 77}, time.Minute))
	require.ErrorIs(t, s.UpdateJobProgress(ctx, job.ID, "intruder", store.JobProgress{}, time.Minute), store.ErrConflict)

	// The owner dies; after its lease another worker resumes from the cursor.
	clock.Advance(2 * time.Minute)
	resumed, err := s.ClaimJob(ctx, "w3", time.Minute)
	require.NoError(t, err)
	require.EqualValues(t, 77, resumed.Cursor)
	require.EqualValues(t, 5, resumed.Done)
	require.ErrorIs(t, s.UpdateJobProgress(ctx, job.ID, owner, store.JobProgress{}, time.Minute), store.ErrConflict)
	require.NoError(t, s.UpdateJobProgress(ctx, job.ID, "w3", store.JobProgress{Total: 12, Done: 12, Cursor: 90}, time.Minute))
	done, err := s.FinishJob(ctx, job.ID, "w3", store.JobSucceeded, "")
	require.NoError(t, err)
	require.Equal(t, store.JobSucceeded, done.Status)
	_, err = s.CancelJob(ctx, job.ID, alice)
	require.ErrorIs(t, err, store.ErrConflict, "finished jobs stay finished")

	// Cancelling a running job stops its worker at the next heartbeat.
	second, err := s.CreateJob(ctx, store.JobSpec{Kind: store.JobDiscard, RecordIDs: []int64{1, 2}}, alice)
	require.NoError(t, err)
	_, err = s.ClaimJob(ctx, "w1", time.Minute)
	require.NoError(t, err)
	_, err = s.CancelJob(ctx, second.ID, alice)
	require.NoError(t, err)
	require.ErrorIs(t, s.UpdateJobProgress(ctx, second.ID, "w1", store.JobProgress{}, time.Minute), store.ErrConflict)
	_, err = s.ClaimJob(ctx, "w1", time.Minute)
	require.ErrorIs(t, err, store.ErrNotFound)
	_, err = s.CancelJob(ctx, 1<<40, alice)
	require.ErrorIs(t, err, store.ErrNotFound)

	jobs, err := s.ListJobs(ctx, 0, 10)
	require.NoError(t, err)
	require.Equal(t, []int64{second.ID, job.ID}, []int64{jobs[0].ID, jobs[1].ID})
	require.Equal(t, []int64{1, 2}, jobs[0].RecordIDs)

	audit, err := s.ListAudit(ctx, 0, 10)
	require.NoError(t, err)
	var actions []string
	for _, e := range audit {
		actions = append(actions, e.Action+":"+e.Outcome)
	}
	require.Equal(t, []string{"cancel_job:not_found", "cancel_job:ok", "create_discard_job:ok",
		"cancel_job:conflict", "finish_job:succeeded", "create_replay_job:ok"}, actions)
	require.Equal(t, filter, audit[5].Filter)
}

func TestJobWalksItsSelectionFromTheCursor(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := storetest.New(t)
	_, err := s.StoreBatch(ctx, parked("dlq.walk", 0, 10), nil)
	require.NoError(t, err)
	f := store.Filter{DLQTopic: "dlq.walk"}
	var ids []int64
	for cursor := int64(0); ; {
		recs, err := s.ListAfter(ctx, f, cursor, 3)
		require.NoError(t, err)
		if len(recs) == 0 {
			break
		}
		for _, r := range recs {
			ids = append(ids, r.ID)
		}
		cursor = recs[len(recs)-1].ID
	}
	require.Len(t, ids, 10)
	require.IsIncreasing(t, ids)
}

// A cancel wins over the lease of its job: BeginReplays refuses once the job is no longer
// running under the holder. The records a cancelled job left replaying come back to
// parked once their lease expires, with an audit row; a running job's expired leases are
// left to whoever resumes it.
func TestCancelledJobLeasesComeBack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, clock := storetest.NewClocked(t)
	ada := store.Actor{Name: "ada"}
	_, err := s.StoreBatch(ctx, parked("dlq.sweep", 0, 4), nil)
	require.NoError(t, err)
	cancelled, _, err := s.SubmitJob(ctx, store.JobRequest{JobSpec: store.JobSpec{Kind: store.JobReplay, RecordIDs: []int64{1, 2}}}, ada)
	require.NoError(t, err)
	running, _, err := s.SubmitJob(ctx, store.JobRequest{JobSpec: store.JobSpec{Kind: store.JobReplay, RecordIDs: []int64{3, 4}}}, ada)
	require.NoError(t, err)
	for _, id := range []int64{cancelled.ID, running.ID} {
		job, err := s.ClaimJob(ctx, "w1", time.Minute)
		require.NoError(t, err)
		require.Equal(t, id, job.ID)
	}
	leased, err := s.BeginReplays(ctx, cancelled.ID, []int64{1}, "w1", time.Minute, ada)
	require.NoError(t, err)
	require.Len(t, leased.ReplayIDs, 1)
	_, err = s.BeginReplays(ctx, running.ID, []int64{3, 4}, "w1", time.Minute, ada)
	require.NoError(t, err)
	_, err = s.CancelJob(ctx, cancelled.ID, ada)
	require.NoError(t, err)

	_, err = s.BeginReplays(ctx, cancelled.ID, []int64{2}, "w1", time.Minute, ada)
	require.ErrorIs(t, err, store.ErrConflict, "no lease after the cancel")
	_, err = s.BeginReplays(ctx, running.ID, []int64{3}, "intruder", time.Minute, ada)
	require.ErrorIs(t, err, store.ErrConflict, "only the job's holder leases for it")

	n, err := s.ReturnExpiredReplays(ctx, store.Actor{Name: "sweeper"})
	require.NoError(t, err)
	require.Zero(t, n, "leases not expired yet")
	clock.Advance(2 * time.Minute)
	n, err = s.ReturnExpiredReplays(ctx, store.Actor{Name: "sweeper"})
	require.NoError(t, err)
	require.Equal(t, 1, n, "only the cancelled job's record")
	for id, want := range map[int64]store.Status{1: store.StatusParked, 2: store.StatusParked, 3: store.StatusReplaying, 4: store.StatusReplaying} {
		rec, err := s.Get(ctx, id)
		require.NoError(t, err)
		require.Equal(t, want, rec.Status, "record %d", id)
	}
	entries, err := s.ListAudit(ctx, 0, store.MaxPageSize)
	require.NoError(t, err)
	require.Equal(t, "return_replay", entries[0].Action)
	require.Equal(t, "sweeper", entries[0].Actor)
	require.Equal(t, []int64{1}, entries[0].RecordIDs)
}

// ClaimRecordJob takes only jobs that name their records, however old the bulk jobs
// ahead of them; ClaimJob takes the oldest of any kind.
func TestClaimRecordJob(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := storetest.New(t)
	ada := store.Actor{Name: "ada"}
	_, err := s.StoreBatch(ctx, parked("dlq.claimrec", 0, 2), nil)
	require.NoError(t, err)
	bulk, _, err := s.SubmitJob(ctx, store.JobRequest{JobSpec: store.JobSpec{Kind: store.JobReplay, Filter: &store.Filter{DLQTopic: "dlq.claimrec"}}}, ada)
	require.NoError(t, err)
	one, _, err := s.SubmitJob(ctx, store.JobRequest{JobSpec: store.JobSpec{Kind: store.JobReplay, RecordIDs: []int64{2}}}, ada)
	require.NoError(t, err)
	got, err := s.ClaimRecordJob(ctx, "w1", time.Minute)
	require.NoError(t, err)
	require.Equal(t, one.ID, got.ID)
	_, err = s.ClaimRecordJob(ctx, "w1", time.Minute)
	require.ErrorIs(t, err, store.ErrNotFound, "the bulk job is not for this slot")
	got, err = s.ClaimJob(ctx, "w1", time.Minute)
	require.NoError(t, err)
	require.Equal(t, bulk.ID, got.ID)
}

// A job reads the leases of a page's range of records by key, once for the page (not once
// per record), also when its connection made that plan while replay_leases was known to
// be empty: the generic plan a connection settles on after five executions was made then
// (a sequential scan of an empty table costs nothing) and kept once the job had filled the
// table, scanning all of it for each record of each page (a 100,000-record replay slowed
// to ~2,000 records a second, BenchmarkBulkReplay's later rounds). The counts are
// replay_leases' own, in the test's schema.
func TestJobPagesReadTheirLeasesByKey(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, one, job := pageReader(t, 100)
	// Known empty, as once a job's outcomes were folded and autovacuum came by.
	_, err := one.Exec(ctx, `VACUUM ANALYZE replay_leases`)
	require.NoError(t, err)
	for range 8 {
		recs, err := s.JobRecords(ctx, job, 0, 100)
		require.NoError(t, err)
		require.Len(t, recs, 100)
	}
	_, err = one.Exec(ctx, `INSERT INTO replay_leases (record_id, owner, until)
		SELECT g, 'elsewhere', now() FROM generate_series(1000000, 1020000) g`)
	require.NoError(t, err)
	seq, idx := tableStat(t, one, "replay_leases", "seq_scan"), tableStat(t, one, "replay_leases", "idx_scan")
	recs, err := s.JobRecords(ctx, job, 0, 100)
	require.NoError(t, err)
	require.Len(t, recs, 100)
	require.Equal(t, seq, tableStat(t, one, "replay_leases", "seq_scan"), "sequential scans of replay_leases by a page read")
	require.Equal(t, idx+1, tableStat(t, one, "replay_leases", "idx_scan"), "index scans of replay_leases by a page read")
}

// A job reads a page in id order and stops at its end: the planner cannot estimate the
// page's test of a record's lease and takes it to pass 0.5 % of the records, so when that
// is fewer than a page it planned to read every record after the cursor and sort them
// (and to compile the plan with JIT), for each page: 59,000 rows read for a page of 1,000
// in BenchmarkBulkReplay, whose table's rows were no longer in id order.
func TestJobPagesReadOnlyTheirRecords(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const n, page = 20000, 1000
	s, one, job := pageReader(t, n)
	// 1 KiB values, the rows in no order of their ids (as rows rewritten by redrives,
	// replays and resets end up): reading many of them by id looks dear to the planner.
	for _, q := range []string{
		`UPDATE dead_letters SET value = decode(repeat('ab', 1024), 'hex')`,
		`CREATE INDEX shuffled ON dead_letters (md5(id::text))`,
		`CLUSTER dead_letters USING shuffled`,
		`DROP INDEX shuffled`,
		`VACUUM ANALYZE dead_letters`,
		// Replayed outcomes, analyzed, as while a job fills the table.
		`INSERT INTO replay_batches (replayed_at, record_ids, offsets)
			SELECT now(), array_agg(g + 999999), array_agg(g) FROM generate_series(1, 20001) g`,
		`INSERT INTO replay_leases (record_id, owner, until, batch_id, batch_idx)
			SELECT g, 'elsewhere', now(), (SELECT max(id) FROM replay_batches), g - 999999
			FROM generate_series(1000000, 1020000) g`,
		`ANALYZE replay_leases`,
	} {
		_, err := one.Exec(ctx, q)
		require.NoError(t, err)
	}
	before := tableStat(t, one, "dead_letters", "idx_tup_fetch") + tableStat(t, one, "dead_letters", "seq_tup_read")
	recs, err := s.JobRecords(ctx, job, 0, page)
	require.NoError(t, err)
	require.Len(t, recs, page)
	read := tableStat(t, one, "dead_letters", "idx_tup_fetch") + tableStat(t, one, "dead_letters", "seq_tup_read") - before
	require.LessOrEqual(t, read, int64(2*page), "records read for a page of %d of %d", page, n)
}

// pageReader is a store on a pool of one connection (every page on it, with its cached
// plans) with n records parked and a replay of them claimed, and the pool.
func pageReader(t *testing.T, n int) (*store.Store, *pgxpool.Pool, store.Job) {
	t.Helper()
	ctx := context.Background()
	_, url := storetest.NewWithURL(t)
	cfg, err := pgxpool.ParseConfig(url)
	require.NoError(t, err)
	cfg.MaxConns = 1
	one, err := pgxpool.NewWithConfig(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(one.Close)
	s := store.New(one)
	_, err = s.StoreBatch(ctx, parked("dlq.page", 0, n), nil)
	require.NoError(t, err)
	// A replay of every parked record, as a bulk replay of a reason or a topic selects
	// most of the table.
	job, _, err := s.SubmitJob(ctx, store.JobRequest{JobSpec: store.JobSpec{Kind: store.JobReplay,
		Filter: &store.Filter{Statuses: []store.Status{store.StatusParked}}}}, store.Actor{Name: "ada"})
	require.NoError(t, err)
	_, err = s.ClaimJob(ctx, "w1", time.Minute)
	require.NoError(t, err)
	return s, one, job
}

// tableStat is column of table's row in pg_stat_user_tables (flushedStat).
func tableStat(t *testing.T, one *pgxpool.Pool, table, column string) int64 {
	t.Helper()
	return flushedStat(t, one, `SELECT coalesce(`+column+`, 0) FROM pg_stat_user_tables WHERE relid = $1::regclass`, table)
}

// flushedStat is the count query reads from the statistics views, once the connection of
// one has flushed its counts (the next time it goes idle after asking to).
func flushedStat(t *testing.T, one *pgxpool.Pool, query string, args ...any) int64 {
	t.Helper()
	ctx := context.Background()
	_, err := one.Exec(ctx, `SELECT pg_stat_force_next_flush()`)
	require.NoError(t, err)
	var n int64
	require.NoError(t, one.QueryRow(ctx, query, args...).Scan(&n))
	return n
}
