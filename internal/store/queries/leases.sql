-- name: BatchSettings :exec
-- BatchSettings: a job's per-batch bookkeeping commits without waiting for the WAL flush:
-- a PostgreSQL crash can lose its last fraction of a second, which only makes those
-- records go again under the same replay id, the at-least-once window a worker crash
-- opens anyway. The operator's request (SubmitJob, DiscardRecord) stays synchronous.
-- Its statements find their rows by key (= ANY of the batch's ids); no sequential scan:
-- replay_leases grows by a row per record while a job runs, faster than its statistics
-- follow, and a plan costed on stale ones (a holder the last ANALYZE never saw is
-- estimated at one row) scanned the whole table for each of the batch's records.
SELECT set_config('synchronous_commit', 'off', true), set_config('enable_seqscan', 'off', true);

-- name: Guard :many
-- Guard takes the lease keys of ids for a writer that must not change a record a replay
-- holds; it returns the keys it took (no lease holds those). Unguard deletes them in the
-- same transaction: the key stays taken until commit all the same.
INSERT INTO replay_leases (record_id, owner, until)
	SELECT id, '', '-infinity' FROM unnest(@ids::bigint[]) id ORDER BY id
	ON CONFLICT (record_id) DO NOTHING RETURNING record_id;

-- name: Unguard :exec
DELETE FROM replay_leases WHERE record_id = ANY(@ids::bigint[]);

-- name: LockRecords :many
SELECT id FROM dead_letters WHERE id = ANY(@ids::bigint[]) ORDER BY id FOR UPDATE;

-- name: LeaseReplays :many
-- LeaseReplays leases ids for a job (NULL: none) under the replay id replay_id, else
-- prefix and the record id. A record is leased when no replay holds it and it is
-- reservable and not reserved by another active job; when an earlier holder of the same
-- job holds it (the caller holds the job, JobHeld in the same transaction, so that holder
-- lost it), keeping its replay id; or when a job that ended left it under an expired
-- lease. A replay whose batch holds its outcome is never leased again. The record's row is
-- not locked: the lease key is the lock, and RecheckReplays confirms the new leases on a
-- later snapshot. It returns the leased ids, their replay ids, whether each lease is new
-- (xmax = 0: an insert, not the update of a lease taken over) and the batch, a row the
-- statement inserts, each lease at its place in ids.
WITH batch AS (INSERT INTO replay_batches (job_id, record_ids) VALUES (sqlc.narg(job), @ids::bigint[]) RETURNING id)
	INSERT INTO replay_leases AS l (record_id, job_id, owner, until, replay_id, batch_id, batch_idx)
	SELECT d.id, sqlc.narg(job), @owner::text, @until::timestamptz,
		coalesce(sqlc.narg(replay_id)::text, CASE WHEN h.job_id = sqlc.narg(job) THEN h.replay_id ELSE sqlc.narg(prefix)::text || d.id::text END),
		(SELECT id FROM batch), array_position(@ids::bigint[], d.id)
	FROM dead_letters d LEFT JOIN LATERAL (
		SELECT * FROM replay_states h WHERE h.record_id = d.id OFFSET 0) h ON true
	WHERE d.id = ANY(@ids) AND (
		h.record_id IS NULL AND (d.status = 'parked' OR d.status = 'scheduled' AND (d.lease_until IS NULL OR d.lease_until <= @now::timestamptz))
			AND (d.job_id IS NULL OR d.job_id = sqlc.narg(job) OR NOT EXISTS (SELECT 1 FROM jobs j WHERE j.id = d.job_id AND j.status IN ('pending', 'running')))
		OR h.replayed_at IS NULL AND h.job_id = sqlc.narg(job)
		OR h.replayed_at IS NULL AND h.until <= @now
			AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.id = h.job_id AND j.status IN ('pending', 'running')))
	ORDER BY d.id
	ON CONFLICT (record_id) DO UPDATE SET job_id = excluded.job_id, owner = excluded.owner, until = excluded.until,
		replay_id = excluded.replay_id, batch_id = excluded.batch_id, batch_idx = excluded.batch_idx
		WHERE NOT EXISTS (SELECT 1 FROM replay_batches rb WHERE rb.id = l.batch_id
		AND (rb.all_produced OR rb.offsets[l.batch_idx] IS NOT NULL))
		AND (l.job_id = sqlc.narg(job) OR l.until <= @now AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.id = l.job_id AND j.status IN ('pending', 'running')))
	RETURNING record_id, replay_id, xmax = 0 AS is_new, batch_id;

-- name: NewBatch :one
-- NewBatch is the batch of a page leased by a copy of its leases (beginFreshReplays).
INSERT INTO replay_batches (job_id, record_ids) VALUES (@job::bigint, @ids::bigint[]) RETURNING id;

-- name: RecheckReplays :many
-- RecheckReplays: inserted are the new leases, held the leases taken over, and the rows of
-- inserted are read from from_id to to_id (a page whose ids are close together), else
-- each of each_id (inserted itself). A statement of its own, on a snapshot taken after the
-- lease's insert ended: it sees every writer that committed before (one that held a lease
-- key the insert waited for, above all). It reads each record's row once (seen). A new
-- lease stays when its record is parked and not reserved by another active job, or
-- scheduled and not claimed by a redrive (nor reserved): its row then carries the lease
-- in lease_until, so that no redrive claims it (the UPDATE waits for a claim in progress
-- and re-reads the row it committed). A scheduled record taken over carries its new
-- holder. It deletes the other new leases, found by their keys, and returns their ids
-- (joined to the leases, the planner could read every lease of the holder for each page:
-- it takes replay_leases for smaller than a running job makes it). Read as a range, a
-- page's rows cost one descent of the index, where finding each id costs one per record;
-- the rows in the range that are not the page's are read and left alone.
WITH seen AS (
		SELECT d.id, d.status = 'parked' AND (d.job_id IS NULL OR d.job_id = sqlc.narg(job) OR NOT EXISTS (SELECT 1 FROM jobs j WHERE j.id = d.job_id AND j.status IN ('pending', 'running'))) AS parked
		FROM dead_letters d
		WHERE d.id BETWEEN sqlc.narg(from_id)::bigint AND sqlc.narg(to_id)::bigint OR d.id = ANY(@each_id::bigint[])
			OR d.id = ANY(@held::bigint[])),
	kept AS (
		UPDATE dead_letters d SET lease_owner = @owner::text, lease_until = @until::timestamptz, changed_at = @now::timestamptz,
			changed_by = @actor::text
		WHERE d.id IN (SELECT seen.id FROM seen WHERE NOT seen.parked AND (seen.id = ANY(@inserted::bigint[]) OR seen.id = ANY(@held)))
			AND d.status = 'scheduled' AND (d.id = ANY(@held)
			OR (d.lease_until IS NULL OR d.lease_until <= @now)
			AND (d.job_id IS NULL OR d.job_id = sqlc.narg(job) OR NOT EXISTS (SELECT 1 FROM jobs j WHERE j.id = d.job_id AND j.status IN ('pending', 'running'))))
		RETURNING d.id),
	lost AS (
		SELECT u.id FROM unnest(@inserted::bigint[]) u(id)
		WHERE u.id NOT IN (SELECT id FROM kept) AND u.id NOT IN (SELECT id FROM seen WHERE parked))
	DELETE FROM replay_leases l WHERE l.record_id = ANY (ARRAY(SELECT id FROM lost)) AND l.owner = @owner
	RETURNING l.record_id;

-- name: FinishBatch :execrows
-- FinishBatch writes the outcome of a batch once: the topic, partition and offset of each
-- record at its place in the batch (NULL: not produced), and whether every record leased
-- was produced.
UPDATE replay_batches SET replayed_at = @now::timestamptz, replayed_by = @actor::text,
		topics = @topics, partitions = @partitions, offsets = @offsets, all_produced = @all_produced
	WHERE id = @id AND replayed_at IS NULL;

-- name: LeasesOfBatch :many
SELECT record_id FROM replay_leases WHERE record_id = ANY(@ids::bigint[]) AND batch_id = @batch_id::bigint;

-- name: FinishReplays :many
-- FinishReplays: each record of ids whose lease owner holds is replayed where the parallel
-- arrays say, at its place in its lease's batch.
UPDATE replay_batches b SET replayed_at = @now::timestamptz, replayed_by = @actor::text,
		topics[l.batch_idx] = u.topic, partitions[l.batch_idx] = u.part, offsets[l.batch_idx] = u.off
	FROM replay_leases l
		JOIN ROWS FROM (unnest(@ids::bigint[]), unnest(@topics::text[]), unnest(@partitions::integer[]), unnest(@offsets::bigint[]))
			AS u(id, topic, part, off)
		ON u.id = l.record_id
	WHERE l.record_id = ANY(@ids::bigint[]) AND l.owner = @owner::text AND b.id = l.batch_id AND NOT EXISTS (SELECT 1 FROM replay_batches rb WHERE rb.id = l.batch_id
		AND (rb.all_produced OR rb.offsets[l.batch_idx] IS NOT NULL))
	RETURNING l.record_id;

-- name: DropSpentBatches :exec
-- DropSpentBatches deletes the batches never finished that no lease names any more (their
-- holder died, or none of their records could be leased): a lease names a batch only from
-- its transaction's commit on and is never moved to an older batch.
DELETE FROM replay_batches b
	WHERE b.replayed_at IS NULL AND NOT EXISTS (SELECT 1 FROM replay_leases l WHERE l.batch_id = b.id);

-- name: ReturnExpiredReplays :many
-- ReturnExpiredReplays ends the expired leases of jobs that ended.
WITH gone AS (
		DELETE FROM replay_leases l WHERE NOT EXISTS (SELECT 1 FROM replay_batches rb WHERE rb.id = l.batch_id
		AND (rb.all_produced OR rb.offsets[l.batch_idx] IS NOT NULL))
			AND l.until <= @now::timestamptz AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.id = l.job_id AND j.status IN ('pending', 'running'))
		RETURNING l.record_id, l.owner),
	back AS (
		UPDATE dead_letters d SET lease_owner = NULL, lease_until = NULL, changed_at = @now, changed_by = @actor::text
		FROM gone g WHERE d.id = g.record_id AND d.lease_owner = g.owner)
	SELECT record_id FROM gone;

-- name: JobHeld :one
SELECT EXISTS (SELECT 1 FROM jobs WHERE id = @id AND status = 'running' AND lease_owner = @owner::text FOR SHARE);

-- name: AbortReplays :many
-- AbortReplays ends the leases of ids that owner holds; with a reason (why they cannot
-- go) the records are parked with it, else they stay where they were (parked, or
-- scheduled with their due time and reason).
WITH gone AS (
		DELETE FROM replay_leases l WHERE l.record_id = ANY(@ids::bigint[]) AND l.owner = @owner::text AND NOT EXISTS (SELECT 1 FROM replay_batches rb WHERE rb.id = l.batch_id
		AND (rb.all_produced OR rb.offsets[l.batch_idx] IS NOT NULL))
		RETURNING l.record_id),
	back AS (
		UPDATE dead_letters d SET
			status = CASE WHEN @reason::text = '' THEN d.status ELSE 'parked' END,
			reason = CASE WHEN @reason = '' THEN d.reason ELSE @reason END,
			lease_owner = NULL, lease_until = NULL, changed_at = @now::timestamptz, changed_by = @actor::text
		FROM gone g WHERE d.id = g.record_id)
	SELECT record_id FROM gone;

-- name: DiscardRecords :many
-- DiscardRecords: the lease keys and rows are taken first (lockRecords), so that a lease
-- committed meanwhile is seen.
UPDATE dead_letters d SET status = 'discarded', job_id = @job::bigint, changed_at = @now::timestamptz, changed_by = @actor::text
	WHERE d.id = ANY(@ids::bigint[]) AND (d.status = 'parked' OR d.status = 'scheduled' AND (d.lease_until IS NULL OR d.lease_until <= @now))
		AND (d.job_id IS NULL OR d.job_id = @job OR NOT EXISTS (SELECT 1 FROM jobs j WHERE j.id = d.job_id AND j.status IN ('pending', 'running')))
		AND NOT EXISTS (SELECT 1 FROM replay_leases l WHERE l.record_id = d.id)
	RETURNING d.id;

-- name: Unreservable :many
-- Unreservable: a record can be reserved when parked, or scheduled and not claimed by a
-- redrive, and no pending or running job holds it.
SELECT d.id FROM dead_letters d LEFT JOIN jobs j ON j.id = d.job_id
	WHERE d.id = ANY(@ids::bigint[])
		AND (NOT (d.status = 'parked' OR d.status = 'scheduled' AND (d.lease_until IS NULL OR d.lease_until <= @now::timestamptz))
		OR j.status IN ('pending', 'running')
		OR EXISTS (SELECT 1 FROM replay_leases l WHERE l.record_id = d.id))
	ORDER BY d.id;

-- name: Reserve :exec
UPDATE dead_letters SET job_id = @job::bigint WHERE id = ANY(@ids::bigint[]);

-- name: RecordTopics :one
-- RecordTopics: the original topics of the records of ids, '' for a record without one.
SELECT array_agg(DISTINCT coalesce(original_topic, ''))::text[] AS topics FROM dead_letters WHERE id = ANY(@ids::bigint[]);
