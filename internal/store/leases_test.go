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
	clock, s, pool := leaseStore(t)
	ada := store.Actor{Name: "ada"}
	due := clock.Now().Add(-time.Minute)
	_, err := s.StoreBatch(ctx, append(parked("dlq.lease", 0, 3), scheduled("dlq.lease", 3, 1, due)...), nil)
	require.NoError(t, err)
	clock.Advance(time.Hour)
	_, err = s.StoreBatch(ctx, parked("dlq.other", 0, 1), nil) // id 5, never leased, stored an hour later
	require.NoError(t, err)
	job := claimedReplay(t, s, "dlq.lease", ada)
	version := func(id int64) string { return rowVersion(t, pool, id) }
	before := version(1)

	batch, err := s.BeginReplays(ctx, job.ID, []int64{1, 2, 3, 4}, "w1", time.Minute, ada)
	require.NoError(t, err)
	leased := batch.ReplayIDs
	require.Len(t, leased, 4)
	require.Equal(t, before, version(1), "leasing a parked record writes no new version of its row")
	require.Equal(t, "0", rowLocker(t, pool, 1), "nor a lock: the lease key is the lock")
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
	require.Equal(t, clock.Now(), st.OldestParked, "the oldest parked record no replay holds")
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

	done, err := s.FinishReplays(ctx, job.ID, "w1", batch, []store.Redriven{
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

// A replay's outcome is written to its record's lease row, not to the record's row
// (migration 00016): finishing leaves the row's version untouched, yet every reader sees
// the record replayed where it was produced (get, the list and count filters, stats, the
// backlog, the conservation audit's rows, a resumed holder's page), and no transition
// takes it (discard, a reservation, another job's lease, a redrive claim of a scheduled
// one). Folding, once the job has ended, moves the outcome into the row, and nothing a
// reader sees changes.
func TestReplayOutcomeLivesInTheLeaseUntilFolded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock, s, pool := leaseStore(t)
	ada := store.Actor{Name: "ada"}
	due := clock.Now().Add(-time.Minute)
	_, err := s.StoreBatch(ctx, append(parked("dlq.fold", 0, 3), scheduled("dlq.fold", 3, 1, due)...), nil)
	require.NoError(t, err)
	job := claimedReplay(t, s, "dlq.fold", ada)
	version := func(id int64) string { return rowVersion(t, pool, id) }
	batch, err := s.BeginReplays(ctx, job.ID, []int64{1, 2, 3, 4}, "w1", time.Minute, ada)
	require.NoError(t, err)
	leased := batch.ReplayIDs
	require.Len(t, leased, 4)
	before := version(1)
	clock.Advance(time.Second)
	replayedAt := clock.Now()
	done, err := s.FinishReplays(ctx, job.ID, "w1", batch, []store.Redriven{
		{ID: 1, Produced: store.Coordinates{Topic: "orders", Partition: 2, Offset: 70}},
		{ID: 2, Produced: store.Coordinates{Topic: "orders", Partition: 0, Offset: 71}},
		{ID: 4, Produced: store.Coordinates{Topic: "orders", Partition: 1, Offset: 72}},
	}, ada)
	require.NoError(t, err)
	require.Equal(t, 3, done)
	require.Equal(t, before, version(1), "finishing a replay writes no new version of the record's row")
	again, err := s.FinishReplays(ctx, job.ID, "w1", batch, []store.Redriven{{ID: 1, Produced: store.Coordinates{Topic: "orders", Offset: 99}}}, ada)
	require.NoError(t, err)
	require.Zero(t, again, "a replayed record is not finished twice")

	// reads is what the readers say of the records, compared before and after the fold.
	type reads struct {
		recs                        map[int64]store.Record
		replayed, replaying, parked []int64
		both                        int64
		stats                       map[store.Status]int64
		backlog                     int
		audit                       map[int64]store.AuditRow
		page                        map[int64]store.Status
	}
	ids := func(f store.Filter) []int64 {
		page, err := s.List(ctx, f, "", 10)
		require.NoError(t, err)
		var out []int64
		for _, r := range page.Records {
			out = append(out, r.ID)
		}
		return out
	}
	read := func() reads {
		var r reads
		r.recs = map[int64]store.Record{}
		for id := int64(1); id <= 4; id++ {
			rec, err := s.Get(ctx, id)
			require.NoError(t, err)
			r.recs[id] = rec
		}
		r.replayed = ids(store.Filter{Statuses: []store.Status{store.StatusReplayed}})
		r.replaying = ids(store.Filter{Statuses: []store.Status{store.StatusReplaying}})
		r.parked = ids(store.Filter{Statuses: []store.Status{store.StatusParked}})
		r.both, err = s.Count(ctx, store.Filter{Statuses: []store.Status{store.StatusReplayed, store.StatusParked}})
		require.NoError(t, err)
		st, err := s.Stats(ctx)
		require.NoError(t, err)
		r.stats = map[store.Status]int64{}
		for _, c := range st.Counts {
			r.stats[c.Status] += c.Count
		}
		backlog, err := s.Backlog(ctx)
		require.NoError(t, err)
		r.backlog = len(backlog)
		rows, err := s.DLQRows(ctx, "dlq.fold")
		require.NoError(t, err)
		r.audit = map[int64]store.AuditRow{}
		for c, row := range rows {
			r.audit[c.Offset+1] = row
		}
		recs, err := s.JobRecords(ctx, job, 0, 10)
		require.NoError(t, err)
		r.page = map[int64]store.Status{}
		for _, rec := range recs {
			if rec.JobID == job.ID {
				r.page[rec.ID] = rec.Status
			}
		}
		return r
	}
	seen := read()
	rec := seen.recs[1]
	require.Equal(t, store.StatusReplayed, rec.Status)
	require.Equal(t, &store.Coordinates{Topic: "orders", Partition: 2, Offset: 70}, rec.Produced)
	require.Equal(t, job.ID, rec.JobID)
	require.Equal(t, leased[1], rec.ReplayID)
	require.Empty(t, rec.LeaseOwner)
	require.True(t, rec.LeaseUntil.IsZero())
	require.Equal(t, replayedAt, rec.ChangedAt)
	require.Equal(t, "ada", rec.ChangedBy)
	require.Equal(t, store.StatusReplayed, seen.recs[4].Status, "a replayed scheduled record")
	require.Empty(t, seen.recs[4].LeaseOwner)
	require.Equal(t, store.StatusReplaying, seen.recs[3].Status)
	require.Equal(t, "w1", seen.recs[3].LeaseOwner)
	require.Equal(t, []int64{4, 2, 1}, seen.replayed)
	require.Equal(t, []int64{3}, seen.replaying)
	require.Empty(t, seen.parked)
	require.EqualValues(t, 3, seen.both)
	require.Equal(t, map[store.Status]int64{store.StatusReplayed: 3, store.StatusReplaying: 1}, seen.stats)
	require.Zero(t, seen.backlog)
	require.Equal(t, store.AuditRow{Status: store.StatusReplayed, TargetTopic: "orders", ReplayID: leased[1]}, seen.audit[1])
	require.Equal(t, map[int64]store.Status{1: store.StatusReplayed, 2: store.StatusReplayed, 4: store.StatusReplayed}, seen.page,
		"a resumed holder counts them done")

	_, err = s.DiscardRecord(ctx, 1, "no", ada)
	require.ErrorIs(t, err, store.ErrConflict, "a replayed record is not discarded")
	_, _, err = s.SubmitJob(ctx, store.JobRequest{JobSpec: store.JobSpec{Kind: store.JobReplay, RecordIDs: []int64{2}}}, ada)
	require.ErrorIs(t, err, store.ErrConflict, "nor replayed again")
	claim, err := s.ClaimDue(ctx, "", "redrive", 10, time.Minute)
	require.NoError(t, err)
	require.Empty(t, claim.Records, "nor redriven")
	n, err := s.FoldReplays(ctx, job.ID, 10)
	require.NoError(t, err)
	require.Zero(t, n, "a running job's outcomes are not folded")

	aborted, err := s.AbortReplays(ctx, job.ID, "w1", []int64{1, 3}, "", ada)
	require.NoError(t, err)
	require.Equal(t, 1, aborted, "a replayed record is not put back")
	_, err = s.FinishJob(ctx, job.ID, "w1", store.JobSucceeded, "")
	require.NoError(t, err)
	n, err = s.FoldReplays(ctx, job.ID, 10)
	require.NoError(t, err)
	require.Equal(t, 1, n, "one batch")
	n, err = s.FoldReplays(ctx, 0, 10)
	require.NoError(t, err)
	require.Zero(t, n, "none left")
	require.NotEqual(t, before, version(1), "folded into the row")
	var status string
	var left, batches int
	require.NoError(t, pool.QueryRow(ctx, `SELECT status, (SELECT count(*) FROM replay_leases), (SELECT count(*) FROM replay_batches)
		FROM dead_letters WHERE id = 1`).Scan(&status, &left, &batches))
	require.Equal(t, "replayed", status)
	require.Zero(t, left)
	require.Zero(t, batches, "a batch no lease names is deleted after the fold")
	folded := read()
	require.Equal(t, store.StatusParked, folded.recs[3].Status, "the aborted one is back")
	seen.recs[3], seen.replaying, seen.parked = folded.recs[3], nil, []int64{3}
	seen.both, seen.stats = 4, map[store.Status]int64{store.StatusReplayed: 3, store.StatusParked: 1}
	seen.backlog, seen.audit[3] = 1, folded.audit[3]
	require.Equal(t, seen, folded, "folding changes nothing a reader sees")
	claim, err = s.ClaimDue(ctx, "", "redrive", 10, time.Minute)
	require.NoError(t, err)
	require.Empty(t, claim.Records, "a folded scheduled record is replayed, not due")
}

// A batch that is never finished (its holder put its records back, or died and the
// sweeper returned them) is deleted once no lease names it.
func TestUnfinishedBatchIsDeletedOnceNoLeaseNamesIt(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, s, pool := leaseStore(t)
	ada := store.Actor{Name: "ada"}
	_, err := s.StoreBatch(ctx, parked("dlq.unfinished", 0, 2), nil)
	require.NoError(t, err)
	job := claimedReplay(t, s, "dlq.unfinished", ada)
	batches := func() (n int) {
		require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM replay_batches`).Scan(&n))
		return n
	}
	_, err = s.BeginReplays(ctx, job.ID, []int64{1, 2}, "w1", time.Minute, ada)
	require.NoError(t, err)
	_, err = s.FoldReplays(ctx, 0, 10)
	require.NoError(t, err)
	require.Equal(t, 1, batches(), "a batch its leases name is kept")
	back, err := s.AbortReplays(ctx, job.ID, "w1", []int64{1, 2}, "", ada)
	require.NoError(t, err)
	require.Equal(t, 2, back)
	n, err := s.FoldReplays(ctx, 0, 10)
	require.NoError(t, err)
	require.Zero(t, n, "nothing to fold")
	require.Zero(t, batches())
}

// A holder that no longer holds its job (taken over, or cancelled) and finishes a batch
// counts only the records whose lease is still the batch's: a record the job's new
// holder leased again reads as that holder's replay, not as the old holder's.
func TestFinishWithoutTheJobCountsOnlyTheBatchsLeases(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock, s, _ := leaseStore(t)
	ada := store.Actor{Name: "ada"}
	_, err := s.StoreBatch(ctx, parked("dlq.takeover", 0, 2), nil)
	require.NoError(t, err)
	job := claimedReplay(t, s, "dlq.takeover", ada)
	first, err := s.BeginReplays(ctx, job.ID, []int64{1, 2}, "w1", time.Minute, ada)
	require.NoError(t, err)
	require.Len(t, first.ReplayIDs, 2)
	clock.Advance(2 * time.Minute) // w1's hold on the job and its leases expire
	_, err = s.ClaimJob(ctx, "w2", time.Minute)
	require.NoError(t, err)
	second, err := s.BeginReplays(ctx, job.ID, []int64{2}, "w2", time.Minute, ada)
	require.NoError(t, err)
	require.Equal(t, first.ReplayIDs[2], second.ReplayIDs[2], "a record keeps its replay id in its job")

	produced := func(id int64, offset int64) store.Redriven {
		return store.Redriven{ID: id, Produced: store.Coordinates{Topic: "orders", Offset: offset}}
	}
	n, err := s.FinishReplays(ctx, job.ID, "w1", first, []store.Redriven{produced(1, 10), produced(2, 11)}, ada)
	require.NoError(t, err)
	require.Equal(t, 1, n, "the old holder's batch keeps only record 1")
	rec, err := s.Get(ctx, 1)
	require.NoError(t, err)
	require.Equal(t, store.StatusReplayed, rec.Status)
	require.Equal(t, int64(10), rec.Produced.Offset)
	rec, err = s.Get(ctx, 2)
	require.NoError(t, err)
	require.Equal(t, store.StatusReplaying, rec.Status)
	require.Equal(t, "w2", rec.LeaseOwner)

	_, err = s.CancelJob(ctx, job.ID, ada)
	require.NoError(t, err)
	n, err = s.FinishReplays(ctx, job.ID, "w2", second, []store.Redriven{produced(2, 12)}, ada)
	require.NoError(t, err)
	require.Equal(t, 1, n, "produced before the cancel, still the batch's")
	rec, err = s.Get(ctx, 2)
	require.NoError(t, err)
	require.Equal(t, store.StatusReplayed, rec.Status)
	require.Equal(t, int64(12), rec.Produced.Offset)
}

// leaseStore is the lease tests' set-up: a store on a schema of its own with a fixed clock,
// and a pool on the same schema that reads its rows directly.
func leaseStore(t *testing.T) (*storetest.Clock, *store.Store, *pgxpool.Pool) {
	t.Helper()
	clock := storetest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	s, url := storetest.NewWithURL(t, store.WithClock(clock.Now))
	pool, err := pgxpool.New(context.Background(), url)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	return clock, s, pool
}

// claimedReplay submits a replay of every record of dlqTopic as actor and claims it as
// holder w1.
func claimedReplay(t *testing.T, s *store.Store, dlqTopic string, actor store.Actor) store.Job {
	t.Helper()
	ctx := context.Background()
	job, _, err := s.SubmitJob(ctx, store.JobRequest{JobSpec: store.JobSpec{Kind: store.JobReplay,
		Filter: &store.Filter{DLQTopic: dlqTopic}}}, actor)
	require.NoError(t, err)
	_, err = s.ClaimJob(ctx, "w1", time.Minute)
	require.NoError(t, err)
	return job
}

// rowLocker is the xmax of record id's dead_letters row: "0" until a transaction deletes,
// updates or locks it (FOR UPDATE and the like write their transaction id there).
func rowLocker(t *testing.T, pool *pgxpool.Pool, id int64) string {
	t.Helper()
	var v string
	require.NoError(t, pool.QueryRow(context.Background(), `SELECT xmax::text FROM dead_letters WHERE id = $1`, id).Scan(&v))
	return v
}

// rowVersion is the version (xmin) of record id's dead_letters row: it changes with each
// rewrite of the row.
func rowVersion(t *testing.T, pool *pgxpool.Pool, id int64) string {
	t.Helper()
	var v string
	require.NoError(t, pool.QueryRow(context.Background(), `SELECT xmin::text FROM dead_letters WHERE id = $1`, id).Scan(&v))
	return v
}

// A job's page whose records no lease holds is leased by copying its leases in: the
// server writes them a heap page at a time (one MULTI_INSERT WAL record per page of
// leases), where an INSERT ... SELECT wrote one record per lease, 1,000 per page.
func TestAFreshPageIsLeasedAHeapPageAtATime(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, s, pool := leaseStore(t)
	const n = 1000
	_, err := s.StoreBatch(ctx, parked("dlq.copy", 0, n), nil)
	require.NoError(t, err)
	job := claimedReplay(t, s, "dlq.copy", store.Actor{Name: "ada"})
	walRecords := walInspector(t, pool)
	var from string
	require.NoError(t, pool.QueryRow(ctx, `SELECT pg_current_wal_lsn()::text`).Scan(&from))

	batch, _ := leasedPage(t, s, job, n, store.Actor{Name: "ada"})

	var xid, file string
	require.NoError(t, pool.QueryRow(ctx, `SELECT xmin::text, pg_relation_filenode('replay_leases')::text
		FROM replay_leases WHERE batch_id = $1 LIMIT 1`, batch.ID).Scan(&xid, &file))
	counts := walRecords(from, xid, file)
	require.Zero(t, counts["INSERT"], "no lease is written by a record of its own")
	require.Positive(t, counts["MULTI_INSERT"])
	require.Less(t, counts["MULTI_INSERT"], n/10, "a record writes a heap page of leases")
}

// walInspector returns a function that counts, by type (INSERT+INIT counts as INSERT),
// the heap WAL records that transaction xid wrote into the relation file file since the
// WAL position from (pg_walinspect, created in the database's public schema if missing).
func walInspector(t *testing.T, pool *pgxpool.Pool) func(from, xid, file string) map[string]int {
	t.Helper()
	ctx := context.Background()
	_, err := pool.Exec(ctx, `CREATE EXTENSION IF NOT EXISTS pg_walinspect SCHEMA public`)
	if err != nil { // two test processes may create it at once
		_, err = pool.Exec(ctx, `CREATE EXTENSION IF NOT EXISTS pg_walinspect SCHEMA public`)
	}
	require.NoError(t, err)
	return func(from, xid, file string) map[string]int {
		// Only flushed WAL can be read, and the lease commits without waiting for the flush:
		// the WAL writer flushes it within its delay (200 ms by default).
		var to string
		require.NoError(t, pool.QueryRow(ctx, `SELECT pg_current_wal_insert_lsn()::text`).Scan(&to))
		require.Eventually(t, func() bool {
			var flushed bool
			err := pool.QueryRow(ctx, `SELECT pg_current_wal_flush_lsn() >= $1::pg_lsn`, to).Scan(&flushed)
			return err == nil && flushed
		}, time.Minute, 10*time.Millisecond)
		rows, err := pool.Query(ctx, `SELECT split_part(record_type, '+', 1), count(*) FROM public.pg_get_wal_records_info($1::pg_lsn, $2::pg_lsn)
			WHERE resource_manager IN ('Heap', 'Heap2') AND xid::text = $3 AND block_ref LIKE '%/' || $4 || ' fork main %'
			GROUP BY 1`, from, to, xid, file)
		require.NoError(t, err)
		counts := map[string]int{}
		for rows.Next() {
			var kind string
			var c int
			require.NoError(t, rows.Scan(&kind, &c))
			counts[kind] = c
		}
		require.NoError(t, rows.Err())
		return counts
	}
}

// Leasing a page rechecks its records' rows reading them as the range they span: a
// descent of dead_letters' key index for the page, where finding each record by its id
// read two to three index blocks per record.
func TestLeasingAPageReadsItsRowsAsARange(t *testing.T) {
	t.Parallel()
	const n = 1000
	s, one, job := pageReader(t, n)
	keyBlocks := func() int64 {
		return flushedStat(t, one, `SELECT idx_blks_hit + idx_blks_read
			FROM pg_statio_user_indexes WHERE indexrelid = 'dead_letters_pkey'::regclass`)
	}
	before := keyBlocks()
	leasedPage(t, s, job, n, store.Actor{Name: "ada"})
	require.Less(t, keyBlocks()-before, int64(n/10), "blocks of dead_letters_pkey read to lease %d records", n)
}

// The rows a page's range read meets that are not the page's are left alone: scheduled
// records between the page's records keep no lease and are still redriven. A page whose
// records are far apart is read id by id, and leased the same.
func TestARangeReadLeavesTheRowsBetweenAlone(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock, s, _ := leaseStore(t)
	ada := store.Actor{Name: "ada"}
	due := clock.Now().Add(-time.Minute)
	var recs []store.NewRecord
	for off := int64(0); off < 5; off++ { // ids 1 to 5: odd ones parked, even ones scheduled
		if off%2 == 0 {
			recs = append(recs, parked("dlq.range", off, 1)...)
		} else {
			recs = append(recs, scheduled("dlq.range", off, 1, due)...)
		}
	}
	recs = append(recs, parked("dlq.range", 5, 95)...) // ids 6 to 100
	_, err := s.StoreBatch(ctx, recs, nil)
	require.NoError(t, err)
	job := claimedReplay(t, s, "dlq.range", ada)

	batch, err := s.BeginReplays(ctx, job.ID, []int64{1, 3, 5}, "w1", time.Minute, ada)
	require.NoError(t, err)
	require.Len(t, batch.ReplayIDs, 3)
	far, err := s.BeginReplays(ctx, job.ID, []int64{6, 100}, "w1", time.Minute, ada)
	require.NoError(t, err)
	require.Len(t, far.ReplayIDs, 2)
	for _, id := range []int64{1, 3, 5, 6, 100} {
		rec, err := s.Get(ctx, id)
		require.NoError(t, err)
		require.Equal(t, store.StatusReplaying, rec.Status, "record %d", id)
	}
	for _, id := range []int64{2, 4} {
		rec, err := s.Get(ctx, id)
		require.NoError(t, err)
		require.Equal(t, store.StatusScheduled, rec.Status, "record %d", id)
		require.Empty(t, rec.LeaseOwner, "record %d", id)
	}
	claim, err := s.ClaimDue(ctx, "", "redrive", 10, time.Minute)
	require.NoError(t, err)
	require.Len(t, claim.Records, 2, "the scheduled records between the page's are redriven")
}

// A replay batch's arrays are compressed with lz4 (migration 00019): pglz, the server's
// default, spent about 4 ms compressing a finished batch of 1,000 records.
func TestReplayBatchArraysAreCompressedWithLz4(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, one, batch := finishedPage(t, 1000)
	var ids, topics, partitions, offsets string
	require.NoError(t, one.QueryRow(ctx, `SELECT pg_column_compression(record_ids), pg_column_compression(topics),
		pg_column_compression(partitions), pg_column_compression(offsets) FROM replay_batches WHERE id = $1`, batch.ID).
		Scan(&ids, &topics, &partitions, &offsets))
	require.Equal(t, []string{"lz4", "lz4", "lz4", "lz4"}, []string{ids, topics, partitions, offsets})
}

// A page's recheck finds the leases it drops by their keys, however many leases its
// holder has: when replay_leases' statistics were taken while another holder's leases
// filled it (autovacuum analyzes it as soon as a job's first pages are in), the planner
// took the new holder for one lease and joined each of its leases to the page's ids, so
// that each page's recheck read every lease the holder had (a second of the server's
// time per page once it held 100,000).
func TestRecheckFindsTheLeasesItDropsByKey(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const page, pages = 1000, 12
	s, one, first := pageReader(t, page*pages)
	ada := store.Actor{Name: "ada"}
	leasePage := func(job store.Job, owner string, p int) {
		ids := make([]int64, page)
		for i := range ids {
			ids[i] = int64(p*page + i + 1)
		}
		_, err := s.BeginReplays(ctx, job.ID, ids, owner, time.Minute, ada)
		require.NoError(t, err)
	}
	leasePage(first, "w1", 0)
	_, err := one.Exec(ctx, `ANALYZE replay_leases`)
	require.NoError(t, err)
	second, _, err := s.SubmitJob(ctx, store.JobRequest{JobSpec: store.JobSpec{Kind: store.JobReplay,
		Filter: &store.Filter{Statuses: []store.Status{store.StatusParked}}}}, ada)
	require.NoError(t, err)
	_, err = s.ClaimJob(ctx, "w2", time.Minute)
	require.NoError(t, err)
	leaseTuples := func() int64 {
		return tableStat(t, one, "replay_leases", "idx_tup_fetch") + tableStat(t, one, "replay_leases", "seq_tup_read")
	}
	var read []int64
	for p := 1; p < pages; p++ {
		before := leaseTuples()
		leasePage(second, "w2", p)
		read = append(read, leaseTuples()-before)
	}
	for p, n := range read {
		require.Less(t, n, int64(page), "leases read to lease page %d, when w2 held %d: %v", p+2, p*page, read)
	}
}
