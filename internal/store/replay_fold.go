package store

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/dlqops/dlq/internal/store/dbsqlc"
)

// After a job ends: its replay outcomes fold into the records' rows, and the leases it
// left expired go back.

// ReturnExpiredReplays returns to the status they had (parked or scheduled) the records left replaying under an expired
// lease by a job that is no longer pending or running (cancelled or finished while its
// holder was away or dead), with one audit row by actor, and returns how many it
// returned. A running job's expired leases are left to whoever resumes the job.
func (s *Jobs) ReturnExpiredReplays(ctx context.Context, actor Actor) (int, error) {
	var returned []int64
	now := s.now()
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		var err error
		returned, err = sorted(queries.ReturnExpiredReplays(ctx, tx, dbsqlc.ReturnExpiredReplaysParams{Now: now, Actor: actor.Name}))
		if err != nil || len(returned) == 0 {
			return err
		}
		return writeAudit(ctx, tx, AuditEntry{At: now, Actor: actor.Name, RequestID: actor.RequestID,
			Action: "return_replay", RecordIDs: returned, Affected: int64(len(returned)), Outcome: "ok"})
	})
	return len(returned), err
}

// FoldReplays moves the replay outcomes of up to limit batches of job (0: of every job)
// into their records' rows and deletes the batches, and returns how many batches it
// folded; only jobs that are no longer pending or running are folded, so that folding
// never competes with a job for the database. Readers see no change: a replayed record
// reads the same before and after (its finish_replay audit row was written when it was
// replayed). When fewer than limit were left, it also deletes the batches never finished
// that no lease names.
func (s *Jobs) FoldReplays(ctx context.Context, job int64, limit int) (int, error) {
	var n int
	if err := s.pool.QueryRow(ctx, sqlFoldReplays, limit, job).Scan(&n); err != nil {
		return 0, interpretError(err)
	}
	if n < limit {
		if err := queries.DropSpentBatches(ctx, s.pool); err != nil {
			return n, interpretError(err)
		}
	}
	return n, nil
}

// $1 limit, $2 job (0: any): up to $1 finished batches of jobs that ended move into their
// records' rows (status replayed, with the lease's job and replay id, the produced
// position and change) and are deleted, with the leases that held their outcomes; what
// readers see does not change. Each batch's arrays are read once (an array read per
// record unpacked each batch's arrays once per record). A lease taken over into a later
// batch is that batch's; one without an outcome (not produced) reads as replaying once
// its batch is gone, as before, until it is returned. SKIP LOCKED lets several runners
// fold at once; each lease is found by its key. It returns how many batches it folded.
// Unlike the other fixed statements it is not generated: sqlc cannot resolve the columns
// of a WITH query read through ROWS FROM … WITH ORDINALITY.
const sqlFoldReplays = `WITH spent AS (
		SELECT b.id FROM replay_batches b
		WHERE b.replayed_at IS NOT NULL AND ($2::bigint = 0 OR b.job_id = $2)
			AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.id = b.job_id AND j.status IN ('pending', 'running'))
		ORDER BY b.id LIMIT $1
		FOR UPDATE SKIP LOCKED),
	dropped AS (
		DELETE FROM replay_batches b WHERE b.id IN (SELECT id FROM spent)
		RETURNING b.*),
	outcome AS (
		SELECT b.id AS batch_id, b.replayed_at, b.replayed_by, o.*
		FROM dropped b, unnest(b.record_ids, b.topics, b.partitions, b.offsets) WITH ORDINALITY
			AS o(record_id, topic, part, off, idx)
		WHERE o.off IS NOT NULL),
	gone AS (
		DELETE FROM replay_leases l USING outcome o
		WHERE l.record_id = o.record_id AND l.batch_id = o.batch_id AND l.batch_idx = o.idx
		RETURNING l.record_id, l.job_id, l.replay_id, o.topic, o.part, o.off, o.replayed_at, o.replayed_by),
	moved AS (
		UPDATE dead_letters d SET status = 'replayed', lease_owner = NULL, lease_until = NULL,
			job_id = g.job_id, replay_id = g.replay_id,
			target_topic = g.topic, produced_partition = g.part, produced_offset = g.off,
			changed_at = g.replayed_at, changed_by = g.replayed_by
		FROM gone g WHERE d.id = g.record_id)
	SELECT count(*) FROM dropped`
