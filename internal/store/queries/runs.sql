-- name: BeginRun :one
INSERT INTO redrive_runs (route, worker_id, status, started_at)
	VALUES (@route, @worker_id, 'running', @started_at) RETURNING id;

-- name: FinishRun :execrows
UPDATE redrive_runs SET status = @status, error = @error, finished_at = @now::timestamptz
	WHERE id = @id AND status = 'running';

-- name: InsertLedger :exec
INSERT INTO run_ledger (run_id, dlq_topic, dlq_partition, from_offset, to_offset,
		redriven, scheduled, parked, skipped, errors, recorded_at)
	VALUES (@run_id, @dlq_topic, @dlq_partition, @from_offset, @to_offset,
		@redriven, @scheduled, @parked, @skipped, @errors, @recorded_at);

-- name: ListRuns :many
SELECT id, route, worker_id, status, error, started_at, finished_at
	FROM redrive_runs WHERE @route::text = '' OR route = @route ORDER BY id DESC LIMIT @max_runs;

-- name: ListLedger :many
SELECT run_id, dlq_topic, dlq_partition, from_offset, to_offset,
		redriven, scheduled, parked, skipped, errors, recorded_at
	FROM run_ledger WHERE run_id = ANY(@run_ids::bigint[]) ORDER BY run_id, dlq_topic, dlq_partition, from_offset;

-- name: ExtendIdleRun :execrows
UPDATE redrive_runs SET finished_at = @now::timestamptz, worker_id = @worker_id
	WHERE id = (SELECT max(id) FROM redrive_runs WHERE route = @route::text) AND idle;

-- name: InsertFinishedRun :exec
INSERT INTO redrive_runs (route, worker_id, status, error, started_at, finished_at, idle)
	VALUES (@route, @worker_id, @status, @error, @started_at, @finished_at::timestamptz, @idle);

-- name: InsertLedgerOnce :exec
-- InsertLedgerOnce is InsertLedger that keeps a row already recorded (EndRun).
INSERT INTO run_ledger (run_id, dlq_topic, dlq_partition, from_offset, to_offset,
		redriven, scheduled, parked, skipped, errors, recorded_at)
	VALUES (@run_id, @dlq_topic, @dlq_partition, @from_offset, @to_offset,
		@redriven, @scheduled, @parked, @skipped, @errors, @recorded_at)
	ON CONFLICT DO NOTHING;

-- name: LastRunEnds :many
-- LastRunEnds is when each registered route's most recent finished run ended, an idle one
-- included: a folded idle row's end moves with every idle run.
SELECT rc.route, last.finished_at::timestamptz AS finished_at FROM route_controls rc
	CROSS JOIN LATERAL (SELECT finished_at FROM redrive_runs r
		WHERE r.route = rc.route AND r.finished_at IS NOT NULL ORDER BY r.id DESC LIMIT 1) last;
