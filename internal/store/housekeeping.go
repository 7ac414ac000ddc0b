package store

import (
	"context"
	"time"

	"github.com/dlqops/dlq/internal/store/dbsqlc"
)

// Retention is how long rows that need nobody any more are kept; zero keeps them forever.
type Retention struct {
	// Records: redriven, replayed and discarded dead-letter rows, by their last change.
	Records time.Duration
	// Runs: redrive runs and their ledger, by when they ended. The newest ledger row of
	// each DLQ partition is kept whatever its age: it says where the last run stopped.
	Runs time.Duration
	// IdleRuns: runs that read nothing (no ledger row), which every idle tick writes.
	IdleRuns time.Duration
	// Jobs: finished (succeeded, failed, cancelled) operator jobs, by when they ended.
	Jobs time.Duration
	// Audit: audit log rows, by when the action happened.
	Audit time.Duration
	// Ledger: ledger gaps, by when they were recorded, and ledger positions no worker has
	// held for that long (a worker refreshes the positions of the partitions it holds,
	// TouchLedgerPositions): a deleted topic's or a retired group's.
	Ledger time.Duration
}

// Tables Housekeep reports on, in the order it purges them.
const (
	TableDeadLetters = "dead_letters"
	TableRuns        = "redrive_runs"
	TableJobs        = "jobs"
	TableAudit       = "audit_log"
	TableGaps        = "ledger_gaps"
	TablePositions   = "ledger_positions"
)

// purgeBatch bounds each DELETE, so that no transaction grows large and concurrent work
// waits for no long lock.
const purgeBatch = 5000

// housekeepingLock and the hash of the schema's name are the keys of the session advisory
// lock that makes one instance at a time run housekeeping: one lock per schema, as
// deployments (and tests) sharing a database each have theirs ("dlqh" in ASCII).
const housekeepingLock int32 = 0x646c7168

// WhileLeading runs fn if no other instance is running it: it holds a session advisory
// lock on one pooled connection while fn runs (fn uses the pool as usual). It reports
// whether fn ran. If that connection breaks, PostgreSQL drops the lock and another
// instance may start; every housekeeping step is safe to run twice.
func (s *Housekeeping) WhileLeading(ctx context.Context, fn func(ctx context.Context) error) (bool, error) {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return false, interpretError(err)
	}
	defer conn.Release()
	got, err := queries.TryLeadHousekeeping(ctx, conn, housekeepingLock)
	if err != nil || !got {
		return false, interpretError(err)
	}
	defer func() {
		// The unlock outlives a cancelled pass; if it fails the connection is closed, which
		// releases the lock too.
		uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := queries.StopLeadingHousekeeping(uctx, conn, housekeepingLock); err != nil {
			_ = conn.Hijack().Close(uctx)
		}
	}()
	return true, fn(ctx)
}

// PurgeOld deletes, in batches, what r says is old enough, calling purged after each
// table with how many rows went. It stops at the first error.
func (s *Housekeeping) PurgeOld(ctx context.Context, r Retention, purged func(table string, rows int64)) error {
	now := s.now()
	steps := []struct {
		table string
		age   time.Duration
		batch purgeBatchFunc
	}{
		{TableDeadLetters, r.Records, s.purgeRecords},
		{TableRuns, r.IdleRuns, func(ctx context.Context, p dbsqlc.PurgeParams) (int64, error) {
			return queries.PurgeIdleRuns(ctx, s.pool, dbsqlc.PurgeIdleRunsParams(p))
		}},
		{TableRuns, r.Runs, func(ctx context.Context, p dbsqlc.PurgeParams) (int64, error) {
			return queries.PurgeRuns(ctx, s.pool, dbsqlc.PurgeRunsParams(p))
		}},
		{TableJobs, r.Jobs, func(ctx context.Context, p dbsqlc.PurgeParams) (int64, error) {
			return queries.PurgeJobs(ctx, s.pool, dbsqlc.PurgeJobsParams(p))
		}},
		{TableAudit, r.Audit, func(ctx context.Context, p dbsqlc.PurgeParams) (int64, error) {
			return queries.PurgeAudit(ctx, s.pool, dbsqlc.PurgeAuditParams(p))
		}},
		{TableGaps, r.Ledger, func(ctx context.Context, p dbsqlc.PurgeParams) (int64, error) {
			return queries.PurgeGaps(ctx, s.pool, dbsqlc.PurgeGapsParams(p))
		}},
		{TablePositions, r.Ledger, func(ctx context.Context, p dbsqlc.PurgeParams) (int64, error) {
			return queries.PurgePositions(ctx, s.pool, dbsqlc.PurgePositionsParams(p))
		}},
	}
	for _, st := range steps {
		if st.age <= 0 {
			continue
		}
		n, err := purge(ctx, st.batch, now.Add(-st.age))
		if n > 0 {
			purged(st.table, n)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// Purge deletes redriven, replayed and discarded records whose last change is older than
// age, in batches so that no transaction grows large, and returns how many it deleted.
func (s *Housekeeping) Purge(ctx context.Context, age time.Duration) (int64, error) {
	return purge(ctx, s.purgeRecords, s.now().Add(-age))
}

// A purgeBatchFunc runs one of the batched DELETEs of retention and returns how many rows
// it deleted.
type purgeBatchFunc func(ctx context.Context, p dbsqlc.PurgeParams) (int64, error)

func (s *Housekeeping) purgeRecords(ctx context.Context, p dbsqlc.PurgeParams) (int64, error) {
	return queries.Purge(ctx, s.pool, p)
}

// purge runs one batched DELETE until a batch deletes fewer rows than the batch size.
func purge(ctx context.Context, batch purgeBatchFunc, cutoff time.Time) (int64, error) {
	var total int64
	for {
		n, err := batch(ctx, dbsqlc.PurgeParams{Cutoff: cutoff, BatchSize: purgeBatch})
		if err != nil {
			return total, interpretError(err)
		}
		total += n
		if n < purgeBatch {
			return total, nil
		}
	}
}

// BacklogCount is how many records of a route wait in one status for one reason.
type BacklogCount struct {
	Route  string
	Status Status
	Reason Reason
	Count  int64
}

// Backlog counts the parked and scheduled records per route and reason right now.
func (s *Housekeeping) Backlog(ctx context.Context) ([]BacklogCount, error) {
	rows, err := queries.Backlog(ctx, s.pool)
	if err != nil {
		return nil, interpretError(err)
	}
	out := make([]BacklogCount, len(rows))
	for i, row := range rows {
		out[i] = BacklogCount{Route: row.Route, Status: Status(row.Status), Reason: Reason(row.Reason), Count: row.Count}
	}
	return out, nil
}
