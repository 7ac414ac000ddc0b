-- name: Purge :execrows
-- Purge and the other purges each delete up to batch_size rows older than cutoff; ids
-- grow with time, so the oldest rows go first.
DELETE FROM dead_letters WHERE id IN (
	SELECT id FROM dead_letters
	WHERE status IN ('redriven', 'replayed', 'discarded') AND changed_at < @cutoff::timestamptz
	ORDER BY changed_at LIMIT @batch_size);

-- name: PurgeIdleRuns :execrows
DELETE FROM redrive_runs WHERE id IN (
	SELECT r.id FROM redrive_runs r
	WHERE r.status <> 'running' AND r.finished_at < @cutoff::timestamptz
	  AND NOT EXISTS (SELECT 1 FROM run_ledger l WHERE l.run_id = r.id)
	ORDER BY r.id LIMIT @batch_size);

-- name: PurgeRuns :execrows
DELETE FROM redrive_runs WHERE id IN (
	SELECT r.id FROM redrive_runs r
	WHERE coalesce(r.finished_at, r.started_at) < @cutoff::timestamptz
	  AND NOT EXISTS (SELECT 1 FROM run_ledger l WHERE l.run_id = r.id AND NOT EXISTS (
	      SELECT 1 FROM run_ledger n WHERE n.dlq_topic = l.dlq_topic AND n.dlq_partition = l.dlq_partition AND n.run_id > l.run_id))
	ORDER BY r.id LIMIT @batch_size);

-- name: PurgeJobs :execrows
DELETE FROM jobs WHERE id IN (
	SELECT id FROM jobs WHERE status IN ('succeeded', 'failed', 'cancelled') AND finished_at < @cutoff::timestamptz
	ORDER BY id LIMIT @batch_size);

-- name: PurgeAudit :execrows
DELETE FROM audit_log WHERE id IN (
	SELECT id FROM audit_log WHERE at < @cutoff::timestamptz ORDER BY id LIMIT @batch_size);

-- name: PurgeGaps :execrows
DELETE FROM ledger_gaps WHERE id IN (
	SELECT id FROM ledger_gaps WHERE recorded_at < @cutoff::timestamptz ORDER BY id LIMIT @batch_size);

-- name: PurgePositions :execrows
DELETE FROM ledger_positions WHERE (consumer_group, dlq_topic, dlq_partition) IN (
	SELECT consumer_group, dlq_topic, dlq_partition FROM ledger_positions WHERE updated_at < @cutoff::timestamptz
	ORDER BY updated_at LIMIT @batch_size);

-- name: TryLeadHousekeeping :one
-- TryLeadHousekeeping takes the session advisory lock of housekeeping, one per schema.
SELECT pg_try_advisory_lock(@lock_key::integer, hashtext(current_schema()));

-- name: StopLeadingHousekeeping :exec
SELECT pg_advisory_unlock(@lock_key::integer, hashtext(current_schema()));
