-- name: GetRecord :one
-- GetRecord reads a record as every reader sees it (the listings build the same columns
-- in Go, recordColumns): a record with a replay lease reads as replaying, with the
-- lease's holder, job and replay id; once the lease's batch holds the replay's outcome
-- and until the runner folds it into the row, as replayed where it was produced, when and
-- by whom (replay_states). Each lookup is one probe of the small replay_leases table's
-- primary key, and of replay_batches' for the outcome.
SELECT id, dlq_topic, dlq_partition, dlq_offset,
	original_topic, original_partition, original_offset, original_timestamp, record_timestamp,
	key, value, header_keys, header_values,
	retry_count, error_class, error_message, reason,
	(CASE (SELECT l.replayed_at IS NULL FROM replay_states l WHERE l.record_id = dead_letters.id)
		WHEN true THEN 'replaying' WHEN false THEN 'replayed' ELSE dead_letters.status END)::text AS status,
	route, due_at,
	CASE WHEN EXISTS (SELECT 1 FROM replay_leases l WHERE l.record_id = dead_letters.id)
		THEN (SELECT CASE WHEN l.replayed_at IS NULL THEN l.owner END FROM replay_states l WHERE l.record_id = dead_letters.id)
		ELSE lease_owner END AS lease_owner,
	CASE WHEN EXISTS (SELECT 1 FROM replay_leases l WHERE l.record_id = dead_letters.id)
		THEN (SELECT CASE WHEN l.replayed_at IS NULL THEN l.until END FROM replay_states l WHERE l.record_id = dead_letters.id)
		ELSE lease_until END AS lease_until,
	coalesce((SELECT l.target_topic FROM replay_states l WHERE l.record_id = dead_letters.id), target_topic) AS target_topic,
	coalesce((SELECT l.produced_partition FROM replay_states l WHERE l.record_id = dead_letters.id), produced_partition) AS produced_partition,
	coalesce((SELECT l.produced_offset FROM replay_states l WHERE l.record_id = dead_letters.id), produced_offset) AS produced_offset,
	coalesce((SELECT l.replay_id FROM replay_states l WHERE l.record_id = dead_letters.id), replay_id) AS replay_id,
	coalesce((SELECT l.job_id FROM replay_states l WHERE l.record_id = dead_letters.id), job_id) AS job_id,
	stored_at,
	coalesce((SELECT l.replayed_at FROM replay_states l WHERE l.record_id = dead_letters.id), changed_at) AS changed_at,
	coalesce((SELECT l.replayed_by FROM replay_states l WHERE l.record_id = dead_letters.id), changed_by) AS changed_by
FROM dead_letters WHERE id = @id;

-- name: RecordExists :one
SELECT EXISTS (SELECT 1 FROM dead_letters WHERE id = @id);

-- name: ClaimDue :many
-- ClaimDue leases up to max_records due scheduled records of route ('' for every route).
-- FOR UPDATE re-checks the condition on the latest row version, so a row another claimer
-- just leased is skipped, not taken twice; a replay's lease on a scheduled row is also in
-- its lease_until, so a row a replay just leased is skipped too.
WITH due AS (
		SELECT id AS due_id FROM dead_letters
		WHERE status = 'scheduled' AND due_at <= @now::timestamptz AND (lease_until IS NULL OR lease_until <= @now)
			AND (@route::text = '' OR route = @route) AND NOT EXISTS (SELECT 1 FROM replay_leases l WHERE l.record_id = dead_letters.id)
		ORDER BY due_at, id
		LIMIT @max_records
		FOR UPDATE SKIP LOCKED)
	UPDATE dead_letters SET lease_owner = @token::text, lease_until = @lease_until::timestamptz
	FROM due WHERE id = due_id
	RETURNING id, dlq_topic, dlq_partition, dlq_offset,
	original_topic, original_partition, original_offset, original_timestamp, record_timestamp,
	key, value, header_keys, header_values,
	retry_count, error_class, error_message, reason,
	(CASE (SELECT l.replayed_at IS NULL FROM replay_states l WHERE l.record_id = dead_letters.id)
		WHEN true THEN 'replaying' WHEN false THEN 'replayed' ELSE dead_letters.status END)::text AS status,
	route, due_at,
	CASE WHEN EXISTS (SELECT 1 FROM replay_leases l WHERE l.record_id = dead_letters.id)
		THEN (SELECT CASE WHEN l.replayed_at IS NULL THEN l.owner END FROM replay_states l WHERE l.record_id = dead_letters.id)
		ELSE lease_owner END AS lease_owner,
	CASE WHEN EXISTS (SELECT 1 FROM replay_leases l WHERE l.record_id = dead_letters.id)
		THEN (SELECT CASE WHEN l.replayed_at IS NULL THEN l.until END FROM replay_states l WHERE l.record_id = dead_letters.id)
		ELSE lease_until END AS lease_until,
	coalesce((SELECT l.target_topic FROM replay_states l WHERE l.record_id = dead_letters.id), target_topic) AS target_topic,
	coalesce((SELECT l.produced_partition FROM replay_states l WHERE l.record_id = dead_letters.id), produced_partition) AS produced_partition,
	coalesce((SELECT l.produced_offset FROM replay_states l WHERE l.record_id = dead_letters.id), produced_offset) AS produced_offset,
	coalesce((SELECT l.replay_id FROM replay_states l WHERE l.record_id = dead_letters.id), replay_id) AS replay_id,
	coalesce((SELECT l.job_id FROM replay_states l WHERE l.record_id = dead_letters.id), job_id) AS job_id,
	stored_at,
	coalesce((SELECT l.replayed_at FROM replay_states l WHERE l.record_id = dead_letters.id), changed_at) AS changed_at,
	coalesce((SELECT l.replayed_by FROM replay_states l WHERE l.record_id = dead_letters.id), changed_by) AS changed_by;

-- name: MarkRedriven :execrows
-- MarkRedriven marks the claimed rows of token redriven where each was produced, given as
-- parallel arrays of id, topic, partition and offset.
UPDATE dead_letters d SET status = 'redriven',
		target_topic = u.topic, produced_partition = u.part, produced_offset = u.off,
		lease_owner = NULL, lease_until = NULL, changed_at = @now, changed_by = @token
	FROM ROWS FROM (unnest(@ids::bigint[]), unnest(@topics::text[]), unnest(@partitions::integer[]), unnest(@offsets::bigint[]))
		AS u(id, topic, part, off)
	WHERE d.id = u.id AND d.status = 'scheduled' AND d.lease_owner = @token;

-- name: ReleaseClaim :execrows
UPDATE dead_letters SET due_at = @due_at::timestamptz, lease_owner = NULL, lease_until = NULL,
		changed_at = @now, changed_by = @token
	WHERE id = ANY(@ids::bigint[]) AND status = 'scheduled' AND lease_owner = @token;

-- name: ParkClaimed :execrows
-- ParkClaimed's message is the record's cause now: its template (fingerprint.Template) and
-- fingerprint (fingerprint.Of, the same bytes hashed) follow it.
UPDATE dead_letters SET status = 'parked', reason = @reason, error_message = @error_message,
		message_template = @message_template::text,
		fingerprint = left(encode(sha256(convert_to(error_class || chr(31) || @message_template || chr(31)
			|| coalesce(original_topic, ''), 'UTF8')), 'hex'), @fingerprint_hex_digits::integer),
		due_at = NULL, lease_owner = NULL, lease_until = NULL, changed_at = @now, changed_by = @token
	WHERE id = ANY(@ids::bigint[]) AND status = 'scheduled' AND lease_owner = @token;

-- name: OldestDue :one
SELECT due_at::timestamptz FROM dead_letters
	WHERE status = 'scheduled' AND route = @route AND due_at <= @now::timestamptz
	ORDER BY due_at LIMIT 1;

-- name: DLQRows :many
-- DLQRows reads every record stored from a DLQ topic for the conservation audit. A
-- replayed record's lease holds the outcome until the runner folds it into the row.
SELECT d.dlq_partition, d.dlq_offset, coalesce(l.status, d.status)::text AS status,
		coalesce(l.target_topic, d.target_topic, '')::text AS target_topic, coalesce(l.replay_id, d.replay_id, '')::text AS replay_id
	FROM dead_letters d LEFT JOIN (SELECT record_id, 'replayed' AS status, target_topic, replay_id
		FROM replay_states WHERE replayed_at IS NOT NULL) l ON l.record_id = d.id
	WHERE d.dlq_topic = @dlq_topic;

-- name: SightTopicID :one
INSERT INTO source_topic_ids AS t (topic, topic_id, seen_since) VALUES (@topic, @topic_id, @now)
	ON CONFLICT (topic) DO UPDATE SET
		replaced_id = CASE WHEN t.topic_id <> EXCLUDED.topic_id THEN t.topic_id ELSE t.replaced_id END,
		seen_since = CASE WHEN t.topic_id <> EXCLUDED.topic_id THEN EXCLUDED.seen_since ELSE t.seen_since END,
		topic_id = EXCLUDED.topic_id
	RETURNING topic_id, seen_since, replaced_id;
