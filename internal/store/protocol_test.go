package store_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/store"
)

// The lease protocol (internal/store/leases.go) on the real database, each ordering of a
// lease and a writer that must not change a leased record held open at its step: the
// writer first (it holds the record's lease key while it commits; the lease waits for
// it, then its recheck drops the lease), and the lease first (the writer waits for the
// lease, then refuses). Every such writer: a discard, a discard job's batch, a
// reservation by a job that names its records. Each ends with the record either leased or
// changed by the writer, never both, and no lease row left behind by the loser.
func TestLeaseAndWriterOneWins(t *testing.T) {
	t.Parallel()
	ada := store.Actor{Name: "ada"}
	writers := map[string]func(ctx context.Context, s *store.Store, id int64) (bool, error){
		"discard": func(ctx context.Context, s *store.Store, id int64) (bool, error) {
			_, err := s.DiscardRecord(ctx, id, "no", ada)
			return err == nil, refusedOrNil(err)
		},
		"discard transition": func(ctx context.Context, s *store.Store, id int64) (bool, error) {
			_, err := s.Discard(ctx, id, ada)
			return err == nil, refusedOrNil(err)
		},
		"discard job batch": func(ctx context.Context, s *store.Store, id int64) (bool, error) {
			n, err := s.DiscardRecords(ctx, 0, []int64{id}, ada)
			return n == 1, err
		},
		"reservation": func(ctx context.Context, s *store.Store, id int64) (bool, error) {
			_, _, err := s.SubmitJob(ctx, store.JobRequest{JobSpec: store.JobSpec{Kind: store.JobDiscard, RecordIDs: []int64{id}}}, ada)
			return err == nil, refusedOrNil(err)
		},
	}
	for name, write := range writers {
		for _, writerFirst := range []bool{true, false} {
			t.Run(name+map[bool]string{true: "/writer first", false: "/lease first"}[writerFirst], func(t *testing.T) {
				t.Parallel()
				ctx := context.Background()
				s, pool, job := parkedReplay(t, "dlq.proto", 1, ada)
				type leaseResult struct {
					leased map[int64]string
					err    error
				}
				leased := make(chan leaseResult, 1)
				lease := func() {
					l, err := s.BeginReplays(ctx, job.ID, []int64{1}, "w1", time.Minute, ada)
					leased <- leaseResult{l.ReplayIDs, err}
				}
				type writeResult struct {
					changed bool
					err     error
				}
				wrote := make(chan writeResult, 1)
				writeIt := func() {
					changed, err := write(ctx, s, 1)
					wrote <- writeResult{changed, err}
				}
				// Both write an audit row last: a lock on audit_log holds the first one
				// open there, its lease key taken, until the second waits for it.
				release, me := blockAudit(t, pool)
				first, second := lease, writeIt
				if writerFirst {
					first, second = writeIt, lease
				}
				go first()
				firstPID := waitBlockedBy(t, pool, me)
				go second()
				waitBlockedBy(t, pool, firstPID)
				release()

				l, w := <-leased, <-wrote
				require.NoError(t, l.err)
				require.NoError(t, w.err)
				require.NotEqual(t, w.changed, len(l.leased) == 1, "exactly one wins")
				require.Equal(t, writerFirst, w.changed, "the first one wins")
				rec, err := s.Get(ctx, 1)
				require.NoError(t, err)
				var leases int
				require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM replay_leases`).Scan(&leases))
				if writerFirst {
					require.Zero(t, leases, "the lease's recheck dropped it")
					require.NotEqual(t, store.StatusReplaying, rec.Status)
				} else {
					require.Equal(t, 1, leases)
					require.Equal(t, store.StatusReplaying, rec.Status)
					require.Equal(t, job.ID, rec.JobID)
				}
			})
		}
	}
}

// Two jobs lease one record, the first held open at its audit row with the record's key
// taken: the second's insert waits for it, meets the lease once it commits, and takes the
// page again with the statement that leaves a held record alone (the first statement
// fails on any lease key it meets). The second leases the record only when the first
// rolled back.
func TestTwoLeasesOfOneRecordOneWins(t *testing.T) {
	t.Parallel()
	ada := store.Actor{Name: "ada"}
	for _, firstCommits := range []bool{true, false} {
		t.Run(map[bool]string{true: "first commits", false: "first rolls back"}[firstCommits], func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			s, pool, first := parkedReplay(t, "dlq.two", 3, ada)
			second, _, err := s.SubmitJob(ctx, store.JobRequest{JobSpec: store.JobSpec{Kind: store.JobReplay,
				Filter: &store.Filter{DLQTopic: "dlq.two"}}}, ada)
			require.NoError(t, err)
			_, err = s.ClaimJob(ctx, "w2", time.Minute)
			require.NoError(t, err)

			type leaseResult struct {
				leased map[int64]string
				err    error
			}
			// The first lease runs in a transaction of the test's: held open after its
			// statements until the second waits for its key, then committed or rolled back.
			tx, err := pool.Begin(ctx)
			require.NoError(t, err)
			defer func() { _ = tx.Rollback(ctx) }()
			var me int
			require.NoError(t, tx.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&me))
			_, err = tx.Exec(ctx, `INSERT INTO replay_leases (record_id, job_id, owner, until, replay_id)
				VALUES (2, $1, 'w1', now() + interval '1 minute', $2)`, first.ID, fmt.Sprintf("%d-2", first.ID))
			require.NoError(t, err)
			leased := make(chan leaseResult, 1)
			go func() {
				l, err := s.BeginReplays(ctx, second.ID, []int64{1, 2, 3}, "w2", time.Minute, ada)
				leased <- leaseResult{l.ReplayIDs, err}
			}()
			waitBlockedBy(t, pool, me)
			if firstCommits {
				require.NoError(t, tx.Commit(ctx))
			} else {
				require.NoError(t, tx.Rollback(ctx))
			}

			l := <-leased
			require.NoError(t, l.err)
			want := map[int64]string{1: fmt.Sprintf("%d-1", second.ID), 3: fmt.Sprintf("%d-3", second.ID)}
			if !firstCommits {
				want[2] = fmt.Sprintf("%d-2", second.ID)
			}
			require.Equal(t, want, l.leased)
			holders := int64Map(t, pool, `SELECT record_id, job_id FROM replay_leases`)
			wantHolders := map[int64]int64{1: second.ID, 2: first.ID, 3: second.ID}
			if !firstCommits {
				wantHolders[2] = second.ID
			}
			require.Equal(t, wantHolders, holders)
		})
	}
}

// A redrive's claim takes no lease key: it claims scheduled records, and one that commits
// between a lease's insert and its recheck makes the recheck drop the lease (the recheck
// waits for the claim's row lock, then reads the row the claim committed).
func TestClaimBetweenLeaseAndRecheckWins(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock, s, pool := leaseStore(t)
	ada := store.Actor{Name: "ada"}
	_, err := s.StoreBatch(ctx, scheduled("dlq.claim", 0, 1, clock.Now().Add(-time.Minute)), nil)
	require.NoError(t, err)
	job := claimedReplay(t, s, "dlq.claim", ada)

	claim, err := pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = claim.Rollback(ctx) }()
	var me int
	require.NoError(t, claim.QueryRow(ctx, `SELECT pg_backend_pid() FROM dead_letters WHERE id = 1 FOR UPDATE`).Scan(&me))
	type leaseResult struct {
		leased map[int64]string
		err    error
	}
	leased := make(chan leaseResult, 1)
	go func() {
		l, err := s.BeginReplays(ctx, job.ID, []int64{1}, "w1", time.Minute, ada)
		leased <- leaseResult{l.ReplayIDs, err}
	}()
	waitBlockedBy(t, pool, me) // its lease inserted, its recheck waiting for the row
	var inserted bool
	require.NoError(t, pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM replay_leases)`).Scan(&inserted))
	require.False(t, inserted, "uncommitted: nobody sees it")
	_, err = claim.Exec(ctx, `UPDATE dead_letters SET lease_owner = 'redrive/1', lease_until = $2 WHERE id = $1`,
		1, clock.Now().Add(time.Minute))
	require.NoError(t, err)
	require.NoError(t, claim.Commit(ctx))

	l := <-leased
	require.NoError(t, l.err)
	require.Empty(t, l.leased, "the claim won")
	require.NoError(t, pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM replay_leases)`).Scan(&inserted))
	require.False(t, inserted, "the recheck dropped the lease")
	rec, err := s.Get(ctx, 1)
	require.NoError(t, err)
	require.Equal(t, store.StatusScheduled, rec.Status)
	require.Equal(t, "redrive/1", rec.LeaseOwner)
}

// A job's batch is finished with one write however many records it has: each record's
// outcome lands at its place in the batch's row (migration 00018), no lease row is
// written (an update of each was a quarter of a bulk replay's database work), and every
// record reads as replayed where it was produced.
func TestFinishingABatchWritesOneRow(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ada := store.Actor{Name: "ada"}
	const n = 1000
	s, one, job := pageReader(t, n)
	batch, done := leasedPage(t, s, job, n, ada)
	leases, batches := tableStat(t, one, "replay_leases", "n_tup_upd"), tableStat(t, one, "replay_batches", "n_tup_upd")
	finished, err := s.FinishReplays(ctx, job.ID, "w1", batch, done, ada)
	require.NoError(t, err)
	require.Equal(t, n, finished)
	require.Equal(t, leases, tableStat(t, one, "replay_leases", "n_tup_upd"), "lease rows written by finishing a batch")
	require.Equal(t, batches+1, tableStat(t, one, "replay_batches", "n_tup_upd"), "batch rows written by finishing a batch")
	replayed, err := s.Count(ctx, store.Filter{Statuses: []store.Status{store.StatusReplayed}})
	require.NoError(t, err)
	require.Equal(t, int64(n), replayed)
	for _, i := range []int{0, 1, 500, n - 1} {
		rec, err := s.Get(ctx, done[i].ID)
		require.NoError(t, err)
		require.Equal(t, store.StatusReplayed, rec.Status)
		require.Equal(t, &done[i].Produced, rec.Produced)
		require.Equal(t, batch.ReplayIDs[done[i].ID], rec.ReplayID)
	}
}

// Whether a record is replayed is read from its batch's row without unpacking the batch's
// outcome arrays when every record of the batch was produced: counting a thousand
// replayed records read each one's place in the batch's arrays, a few kilobytes fetched
// and decompressed per record.
func TestReplayedStatusReadsNoOutcomeArrays(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const n = 1000
	s, one, _ := finishedPage(t, n)
	toast := func() int64 {
		return flushedStat(t, one, `SELECT coalesce(toast_blks_hit, 0) + coalesce(toast_blks_read, 0)
			FROM pg_statio_user_tables WHERE relid = 'replay_batches'::regclass`)
	}
	before := toast()
	replayed, err := s.Count(ctx, store.Filter{Statuses: []store.Status{store.StatusReplayed}})
	require.NoError(t, err)
	require.Equal(t, int64(n), replayed)
	replaying, err := s.Count(ctx, store.Filter{Statuses: []store.Status{store.StatusReplaying}})
	require.NoError(t, err)
	require.Zero(t, replaying)
	require.Equal(t, before, toast(), "blocks of the batch's outcome arrays read to count its records")
}

// finishedPage is a store (pageReader) whose n parked records a job leased as one batch
// (leasedPage) and finished, every record produced; it returns the store, its one
// connection and the batch.
func finishedPage(t *testing.T, n int) (*store.Store, *pgxpool.Pool, store.ReplayBatch) {
	t.Helper()
	ada := store.Actor{Name: "ada"}
	s, one, job := pageReader(t, n)
	batch, done := leasedPage(t, s, job, n, ada)
	_, err := s.FinishReplays(context.Background(), job.ID, "w1", batch, done, ada)
	require.NoError(t, err)
	return s, one, batch
}

// leasedPage leases records 1 to n for job as w1 and returns the batch and an outcome for
// each of its records, their offsets spread as a topic's are (the batch's arrays then do
// not compress into its row).
func leasedPage(t *testing.T, s *store.Store, job store.Job, n int, actor store.Actor) (store.ReplayBatch, []store.Redriven) {
	t.Helper()
	ids := make([]int64, n)
	done := make([]store.Redriven, n)
	for i := range ids {
		ids[i] = int64(i + 1)
		done[i] = store.Redriven{ID: ids[i], Produced: store.Coordinates{Topic: "orders.replayed-somewhere", Partition: int32(i % 3), Offset: int64(i) * 7919}}
	}
	batch, err := s.BeginReplays(context.Background(), job.ID, ids, "w1", time.Minute, actor)
	require.NoError(t, err)
	require.Len(t, batch.ReplayIDs, n)
	return batch, done
}

// parkedReplay is a lease store (leaseStore) with n records parked from dlqTopic and a
// replay of them claimed by w1 (claimedReplay).
func parkedReplay(t *testing.T, dlqTopic string, n int, actor store.Actor) (*store.Store, *pgxpool.Pool, store.Job) {
	t.Helper()
	_, s, pool := leaseStore(t)
	_, err := s.StoreBatch(context.Background(), parked(dlqTopic, 0, n), nil)
	require.NoError(t, err)
	return s, pool, claimedReplay(t, s, dlqTopic, actor)
}

// int64Map runs query, whose rows are two bigints, and returns the first mapped to the
// second.
func int64Map(t *testing.T, pool *pgxpool.Pool, query string) map[int64]int64 {
	t.Helper()
	rows, err := pool.Query(context.Background(), query)
	require.NoError(t, err)
	out := map[int64]int64{}
	for rows.Next() {
		var k, v int64
		require.NoError(t, rows.Scan(&k, &v))
		out[k] = v
	}
	require.NoError(t, rows.Err())
	return out
}

// blockAudit holds a lock on audit_log that makes every insert of an audit row wait, until
// release; it returns release and the pid of the session holding the lock.
func blockAudit(t *testing.T, pool *pgxpool.Pool) (release func(), pid int) {
	t.Helper()
	ctx := context.Background()
	tx, err := pool.Begin(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { _ = tx.Rollback(ctx) })
	_, err = tx.Exec(ctx, `LOCK TABLE audit_log IN SHARE MODE`)
	require.NoError(t, err)
	require.NoError(t, tx.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid))
	return func() { require.NoError(t, tx.Commit(ctx)) }, pid
}

// waitBlockedBy waits until a session waits for a lock that session pid holds, and
// returns the waiting session's pid.
func waitBlockedBy(t *testing.T, pool *pgxpool.Pool, pid int) int {
	t.Helper()
	var waiting int
	require.Eventually(t, func() bool {
		err := pool.QueryRow(context.Background(),
			`SELECT pid FROM pg_stat_activity WHERE $1::int = ANY(pg_blocking_pids(pid)) LIMIT 1`, pid).Scan(&waiting)
		return err == nil
	}, time.Minute, 5*time.Millisecond, "nobody waits for session %d", pid)
	return waiting
}

// refusedOrNil is nil for a refusal (ErrConflict), which the caller reports as no change.
func refusedOrNil(err error) error {
	if errors.Is(err, store.ErrConflict) {
		return nil
	}
	return err
}
