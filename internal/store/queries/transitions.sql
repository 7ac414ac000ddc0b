-- name: Discard :one
-- Discard: operators act on parked rows and on scheduled rows no redrive worker is
-- producing, that no replay holds.
UPDATE dead_letters SET status = 'discarded', lease_owner = NULL, lease_until = NULL, changed_at = @now, changed_by = @actor
	WHERE id = @id AND (status = 'parked' OR status = 'scheduled' AND (lease_until IS NULL OR lease_until <= @now))
		AND NOT EXISTS (SELECT 1 FROM replay_leases l WHERE l.record_id = dead_letters.id)
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

-- name: RetryNow :one
UPDATE dead_letters SET due_at = @now::timestamptz, changed_at = @now, changed_by = @actor
	WHERE id = @id AND status = 'scheduled' AND NOT EXISTS (SELECT 1 FROM replay_leases l WHERE l.record_id = dead_letters.id)
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
