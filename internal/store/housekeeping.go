package store

import (
	"context"
	"time"
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

// $1 cutoff, $2 batch size. Ids grow with time, so the oldest rows go first.
const (
	sqlPurgeRuns = `DELETE FROM redrive_runs WHERE id IN (
	SELECT r.id FROM redrive_runs r
	WHERE coalesce(r.finished_at, r.started_at) < $1
	  AND NOT EXISTS (SELECT 1 FROM run_ledger l WHERE l.run_id = r.id AND NOT EXISTS (
	      SELECT 1 FROM run_ledger n WHERE n.dlq_topic = l.dlq_topic AND n.dlq_partition = l.dlq_partition AND n.run_id > l.run_id))
	ORDER BY r.id LIMIT $2)`
	sqlPurgeIdleRuns = `DELETE FROM redrive_runs WHERE id IN (
	SELECT r.id FROM redrive_runs r
	WHERE r.status <> 'running' AND r.finished_at < $1
	  AND NOT EXISTS (SELECT 1 FROM run_ledger l WHERE l.run_id = r.id)
	ORDER BY r.id LIMIT $2)`
	sqlPurgeJobs = `DELETE FROM jobs WHERE id IN (
	SELECT id FROM jobs WHERE status IN ('succeeded', 'failed', 'cancelled') AND finished_at < $1
	ORDER BY id LIMIT $2)`
	sqlPurgeAudit = `DELETE FROM audit_log WHERE id IN (
	SELECT id FROM audit_log WHERE at < $1 ORDER BY id LIMIT $2)`
	sqlPurgeGaps = `DELETE FROM ledger_gaps WHERE id IN (
	SELECT id FROM ledger_gaps WHERE recorded_at < $1 ORDER BY id LIMIT $2)`
	sqlPurgePositions = `DELETE FROM ledger_positions WHERE (consumer_group, dlq_topic, dlq_partition) IN (
	SELECT consumer_group, dlq_topic, dlq_partition FROM ledger_positions WHERE updated_at < $1
	ORDER BY updated_at LIMIT $2)`
)

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
	var got bool
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1, hashtext(current_schema()))`, housekeepingLock).Scan(&got); err != nil || !got {
		return false, interpretError(err)
	}
	defer func() {
		// The unlock outlives a cancelled pass; if it fails the connection is closed, which
		// releases the lock too.
		uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if _, err := conn.Exec(uctx, `SELECT pg_advisory_unlock($1, hashtext(current_schema()))`, housekeepingLock); err != nil {
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
		sql   string
	}{
		{TableDeadLetters, r.Records, sqlPurge},
		{TableRuns, r.IdleRuns, sqlPurgeIdleRuns},
		{TableRuns, r.Runs, sqlPurgeRuns},
		{TableJobs, r.Jobs, sqlPurgeJobs},
		{TableAudit, r.Audit, sqlPurgeAudit},
		{TableGaps, r.Ledger, sqlPurgeGaps},
		{TablePositions, r.Ledger, sqlPurgePositions},
	}
	for _, st := range steps {
		if st.age <= 0 {
			continue
		}
		n, err := s.purge(ctx, st.sql, now.Add(-st.age))
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
	return s.purge(ctx, sqlPurge, s.now().Add(-age))
}

// purge runs one batched DELETE until a batch deletes fewer rows than the batch size.
func (s *Housekeeping) purge(ctx context.Context, sql string, cutoff time.Time) (int64, error) {
	var total int64
	for {
		tag, err := s.pool.Exec(ctx, sql, cutoff, purgeBatch)
		if err != nil {
			return total, interpretError(err)
		}
		total += tag.RowsAffected()
		if tag.RowsAffected() < purgeBatch {
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

const sqlBacklog = `SELECT route, status, reason, count(*) FROM dead_letters
	WHERE status IN ('parked', 'scheduled') AND NOT ` + leased + ` GROUP BY 1, 2, 3`

// Backlog counts the parked and scheduled records per route and reason right now.
func (s *Housekeeping) Backlog(ctx context.Context) ([]BacklogCount, error) {
	rows, err := s.pool.Query(ctx, sqlBacklog)
	if err != nil {
		return nil, interpretError(err)
	}
	return collect(rows, func(r scanner) (BacklogCount, error) {
		var b BacklogCount
		err := r.Scan(&b.Route, &b.Status, &b.Reason, &b.Count)
		return b, err
	})
}
