-- name: AdvancePositions :exec
-- AdvancePositions moves each position of a group forward (a lower one is ignored).
INSERT INTO ledger_positions (consumer_group, dlq_topic, dlq_partition, committed_offset, updated_at)
	SELECT @consumer_group::text, t, p, o, @now::timestamptz
	FROM ROWS FROM (unnest(@topics::text[]), unnest(@partitions::integer[]), unnest(@offsets::bigint[])) AS u(t, p, o)
	ON CONFLICT (consumer_group, dlq_topic, dlq_partition) DO UPDATE
	SET committed_offset = EXCLUDED.committed_offset, updated_at = EXCLUDED.updated_at
	WHERE ledger_positions.committed_offset < EXCLUDED.committed_offset;

-- name: AdvancePositionsUnflushed :exec
-- AdvancePositionsUnflushed is AdvancePositions committed asynchronously: the setting,
-- local to the statement's own transaction, is read when it commits.
WITH unflushed AS (SELECT set_config('synchronous_commit', 'off', true))
	INSERT INTO ledger_positions (consumer_group, dlq_topic, dlq_partition, committed_offset, updated_at)
	SELECT @consumer_group::text, t, p, o, @now::timestamptz
	FROM unflushed, ROWS FROM (unnest(@topics::text[]), unnest(@partitions::integer[]), unnest(@offsets::bigint[])) AS u(t, p, o)
	ON CONFLICT (consumer_group, dlq_topic, dlq_partition) DO UPDATE
	SET committed_offset = EXCLUDED.committed_offset, updated_at = EXCLUDED.updated_at
	WHERE ledger_positions.committed_offset < EXCLUDED.committed_offset;

-- name: FlushLedger :exec
INSERT INTO ledger_flushes (consumer_group, flushed_at) VALUES (@consumer_group, @now)
	ON CONFLICT (consumer_group) DO UPDATE SET flushed_at = EXCLUDED.flushed_at;

-- name: TouchPositions :exec
-- TouchPositions writes only rows refreshed before fresh_before, so a worker may call it
-- on every run.
UPDATE ledger_positions SET updated_at = @now::timestamptz
	FROM ROWS FROM (unnest(@topics::text[]), unnest(@partitions::integer[])) AS u(t, p)
	WHERE consumer_group = @consumer_group::text AND dlq_topic = u.t AND dlq_partition = u.p
		AND updated_at < @fresh_before::timestamptz;

-- name: LedgerPositions :many
SELECT dlq_topic, dlq_partition, committed_offset FROM ledger_positions WHERE consumer_group = @consumer_group;

-- name: InsertGap :exec
INSERT INTO ledger_gaps (consumer_group, route, dlq_topic, dlq_partition, from_offset, to_offset, cause, lost, recorded_at)
	VALUES (@consumer_group, @route, @dlq_topic, @dlq_partition, @from_offset, @to_offset, @cause, @lost, @recorded_at);

-- name: LedgerGaps :many
SELECT consumer_group, route, dlq_topic, dlq_partition, from_offset, to_offset, cause, lost, recorded_at
	FROM ledger_gaps WHERE consumer_group = @consumer_group AND dlq_topic = @dlq_topic
	ORDER BY dlq_partition, from_offset, id;
