package store

// The statements of the replay lease protocol (leases.go), shared by the single-record
// transitions and a job's batches.

const sqlLockRecords = `SELECT id FROM dead_letters WHERE id = ANY($1) ORDER BY id FOR UPDATE`

// A record can be reserved when parked, or scheduled and not claimed by a redrive, and no
// pending or running job holds it. $1 ids, $2 now.
const reservable = `(d.status = 'parked' OR d.status = 'scheduled' AND (d.lease_until IS NULL OR d.lease_until <= $2))`

// activeJobOfRow and activeJobOfLease are true when the job of a dead_letters row (d) or
// of a lease (l) is pending or running.
const (
	activeJobOfRow   = `EXISTS (SELECT 1 FROM jobs j WHERE j.id = d.job_id AND j.status IN ('pending', 'running'))`
	activeJobOfLease = `EXISTS (SELECT 1 FROM jobs j WHERE j.id = l.job_id AND j.status IN ('pending', 'running'))`
)

// leaseReplayed is true when a lease (l) is replayed: every record of its batch was
// produced, or its batch holds an offset at its place (read only when some were not).
const leaseReplayed = `EXISTS (SELECT 1 FROM replay_batches rb WHERE rb.id = l.batch_id
	AND (rb.all_produced OR rb.offsets[l.batch_idx] IS NOT NULL))`

// $1 ids, $2 now, $3 owner, $4 lease until, $5 job (NULL: none), $6 replay id prefix, $7
// replay id (NULL: the prefix and the record id). A record is leased when no
// replay holds it and it is reservable and not reserved by another active job; when an
// earlier holder of the same job holds it (the caller holds the job, sqlJobHeld in the
// same transaction, so that holder lost it), keeping its replay id; or when a job that
// ended left it under an expired lease. A replay whose batch holds its outcome is
// never leased again. The record's row is not locked: the lease key is the lock (see
// BeginReplays), and sqlRecheckReplays confirms the new leases on a later snapshot. It
// returns the leased ids, their replay ids, whether each lease is new (xmax = 0: an
// insert, not the update of a lease taken over) and the batch, a row the statement
// inserts, each lease at its place in $1.
const sqlLeaseReplays = `WITH batch AS (INSERT INTO replay_batches (job_id, record_ids) VALUES ($5, $1) RETURNING id)
	INSERT INTO replay_leases AS l (record_id, job_id, owner, until, replay_id, batch_id, batch_idx)
	SELECT d.id, $5, $3, $4, coalesce($7, CASE WHEN h.job_id = $5 THEN h.replay_id ELSE $6 || d.id::text END),
		(SELECT id FROM batch), array_position($1::bigint[], d.id)
	FROM dead_letters d LEFT JOIN LATERAL (
		SELECT * FROM replay_states h WHERE h.record_id = d.id OFFSET 0) h ON true
	WHERE d.id = ANY($1) AND (
		h.record_id IS NULL AND ` + reservable + `
			AND (d.job_id IS NULL OR d.job_id = $5 OR NOT ` + activeJobOfRow + `)
		OR h.replayed_at IS NULL AND h.job_id = $5
		OR h.replayed_at IS NULL AND h.until <= $2
			AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.id = h.job_id AND j.status IN ('pending', 'running')))
	ORDER BY d.id
	ON CONFLICT (record_id) DO UPDATE SET job_id = excluded.job_id, owner = excluded.owner, until = excluded.until,
		replay_id = excluded.replay_id, batch_id = excluded.batch_id, batch_idx = excluded.batch_idx
		WHERE NOT ` + leaseReplayed + ` AND (l.job_id = $5 OR l.until <= $2 AND NOT ` + activeJobOfLease + `)
	RETURNING record_id, replay_id, xmax = 0, batch_id`

// $1 job (NULL: none), $2 the records asked for: a new batch (beginFreshReplays).
const sqlNewBatch = `INSERT INTO replay_batches (job_id, record_ids) VALUES ($1, $2) RETURNING id`

// $1 new leases, $2 now, $3 actor, $4 owner, $5 lease until, $6 job (NULL: none), $7
// leases taken over, and where to read the rows of $1: from $8 to $9 (a page whose ids
// are close together), else $10 ($1 itself). A statement of its own, on a snapshot taken
// after the lease's insert ended: it sees every writer that committed before (one that
// held a lease key the insert waited for, above all). It reads each record's row once
// (seen). A new lease stays when its record is parked and not reserved by another active
// job, or scheduled and not claimed by a redrive (nor reserved): its row then carries the
// lease in lease_until, so that no redrive claims it (the UPDATE waits for a claim in
// progress and re-reads the row it committed). A scheduled record taken over carries its
// new holder. It deletes the other new leases, found by their keys, and returns their
// ids (joined to the leases, the planner could read every lease of the holder for each
// page: it takes replay_leases for smaller than a running job makes it). Read as a range,
// a page's rows cost one descent of the index, where finding each id costs one per
// record; the rows in the range that are not the page's are read and left alone.
const sqlRecheckReplays = `WITH seen AS (
		SELECT d.id, d.status = 'parked' AND (d.job_id IS NULL OR d.job_id = $6 OR NOT ` + activeJobOfRow + `) AS parked
		FROM dead_letters d WHERE d.id BETWEEN $8 AND $9 OR d.id = ANY($10) OR d.id = ANY($7)),
	kept AS (
		UPDATE dead_letters d SET lease_owner = $4, lease_until = $5, changed_at = $2, changed_by = $3
		WHERE d.id IN (SELECT id FROM seen WHERE NOT parked AND (id = ANY($1) OR id = ANY($7)))
			AND d.status = 'scheduled' AND (d.id = ANY($7)
			OR (d.lease_until IS NULL OR d.lease_until <= $2)
			AND (d.job_id IS NULL OR d.job_id = $6 OR NOT ` + activeJobOfRow + `))
		RETURNING d.id),
	lost AS (
		SELECT u.id FROM unnest($1::bigint[]) u(id)
		WHERE u.id NOT IN (SELECT id FROM kept) AND u.id NOT IN (SELECT id FROM seen WHERE parked))
	DELETE FROM replay_leases l WHERE l.record_id = ANY (ARRAY(SELECT id FROM lost)) AND l.owner = $4
	RETURNING l.record_id`

// sqlGuard takes the lease keys of $1 for a writer that must not change a record a replay
// holds; it returns the keys it took (no lease holds those). sqlUnguard deletes them in
// the same transaction: the key stays taken until commit all the same (see lockRecords).
const (
	sqlGuard = `INSERT INTO replay_leases (record_id, owner, until)
	SELECT id, '', '-infinity' FROM unnest($1::bigint[]) id ORDER BY id
	ON CONFLICT (record_id) DO NOTHING RETURNING record_id`
	sqlUnguard = `DELETE FROM replay_leases WHERE record_id = ANY($1)`
)

// $1 ids, $2 now, $3 actor, $4 owner, then parallel arrays of topic, partition and offset
// in the order of $1: each record whose lease owner holds is replayed there, at its place
// in its lease's batch (FinishReplay: one record; a job finishes a whole batch at once,
// FinishReplays).
const sqlFinishReplays = `UPDATE replay_batches b SET replayed_at = $2, replayed_by = $3,
		topics[l.batch_idx] = u.topic, partitions[l.batch_idx] = u.part, offsets[l.batch_idx] = u.off
	FROM replay_leases l JOIN unnest($1::bigint[], $5::text[], $6::integer[], $7::bigint[]) AS u(id, topic, part, off)
		ON u.id = l.record_id
	WHERE l.record_id = ANY($1) AND l.owner = $4 AND b.id = l.batch_id AND NOT ` + leaseReplayed + `
	RETURNING l.record_id`

// $1 ids, $2 now, $3 actor, $4 owner, $5 reason: the leases of ids that owner holds end;
// with a reason (why they cannot go) the records are parked with it, else they stay where
// they were (parked, or scheduled with their due time and reason).
const sqlAbortReplays = `WITH gone AS (
		DELETE FROM replay_leases l WHERE l.record_id = ANY($1) AND l.owner = $4 AND NOT ` + leaseReplayed + `
		RETURNING l.record_id),
	back AS (
		UPDATE dead_letters d SET
			status = CASE WHEN $5 = '' THEN d.status ELSE 'parked' END,
			reason = CASE WHEN $5 = '' THEN d.reason ELSE $5 END,
			lease_owner = NULL, lease_until = NULL, changed_at = $2, changed_by = $3
		FROM gone g WHERE d.id = g.record_id)
	SELECT record_id FROM gone`
