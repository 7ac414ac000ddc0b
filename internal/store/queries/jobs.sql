-- name: CreateJob :one
INSERT INTO jobs (kind, filter, record_ids, target_topic, redrive_to, reset_retry, rate_per_second,
		confirmed_count, status, created_by, request_id, created_at, updated_at)
	VALUES (@kind, @filter, @record_ids, @target_topic, @redrive_to, @reset_retry, @rate_per_second, @confirmed_count, 'pending',
		@created_by, @request_id, @now, @now)
	RETURNING id, kind, filter, record_ids, target_topic, redrive_to, reset_retry, rate_per_second,
		confirmed_count, status, total, done, failed, cursor_id, lease_owner, lease_until,
		error, created_by, request_id, created_at, started_at, updated_at, finished_at, topics, edit, skipped,
		in_flight_at_cancel;

-- name: SubmitJob :one
INSERT INTO jobs (kind, filter, record_ids, target_topic, redrive_to, reset_retry, rate_per_second,
		confirmed_count, status, created_by, request_id, created_at, updated_at, idempotency_key, topics, edit)
	VALUES (@kind, @filter, @record_ids, @target_topic, @redrive_to, @reset_retry, @rate_per_second, @confirmed_count, 'pending',
		@created_by, @request_id, @now, @now, @idempotency_key, @topics, @edit)
	RETURNING id, kind, filter, record_ids, target_topic, redrive_to, reset_retry, rate_per_second,
		confirmed_count, status, total, done, failed, cursor_id, lease_owner, lease_until,
		error, created_by, request_id, created_at, started_at, updated_at, finished_at, topics, edit, skipped,
		in_flight_at_cancel;

-- name: LockActor :exec
-- LockActor orders an actor's submissions until commit, so that its count of active jobs
-- holds.
SELECT pg_advisory_xact_lock(hashtextextended('dlq-jobs:' || @actor::text, 0));

-- name: CountActiveJobs :one
SELECT count(*) FROM jobs WHERE created_by = @actor AND status IN ('pending', 'running');

-- name: JobByIdempotencyKey :one
SELECT id, kind, filter, record_ids, target_topic, redrive_to, reset_retry, rate_per_second,
		confirmed_count, status, total, done, failed, cursor_id, lease_owner, lease_until,
		error, created_by, request_id, created_at, started_at, updated_at, finished_at, topics, edit, skipped,
		in_flight_at_cancel
	FROM jobs WHERE created_by = @actor AND idempotency_key = @idempotency_key::text;

-- name: GetJob :one
SELECT id, kind, filter, record_ids, target_topic, redrive_to, reset_retry, rate_per_second,
		confirmed_count, status, total, done, failed, cursor_id, lease_owner, lease_until,
		error, created_by, request_id, created_at, started_at, updated_at, finished_at, topics, edit, skipped,
		in_flight_at_cancel
	FROM jobs WHERE id = @id;

-- name: JobExists :one
SELECT EXISTS (SELECT 1 FROM jobs WHERE id = @id);

-- name: ListJobs :many
-- ListJobs: topics are those of a scoped token, NULL for an unscoped one: a scoped token
-- sees the jobs whose every topic it sees (a job with NULL topics may touch any topic).
SELECT id, kind, filter, record_ids, target_topic, redrive_to, reset_retry, rate_per_second,
		confirmed_count, status, total, done, failed, cursor_id, lease_owner, lease_until,
		error, created_by, request_id, created_at, started_at, updated_at, finished_at, topics, edit, skipped,
		in_flight_at_cancel
	FROM jobs
	WHERE id < @before_id AND (@topics::text[] IS NULL OR topics <@ @topics) ORDER BY id DESC LIMIT @max_jobs;

-- name: ClaimJob :one
WITH next AS (
		SELECT id AS next_id FROM jobs
		WHERE status = 'pending' OR status = 'running' AND lease_until <= @now::timestamptz
		ORDER BY id LIMIT 1
		FOR UPDATE SKIP LOCKED)
	UPDATE jobs SET status = 'running', lease_owner = @owner::text, lease_until = @lease_until::timestamptz,
		started_at = coalesce(started_at, @now), updated_at = @now
	FROM next WHERE id = next_id
	RETURNING id, kind, filter, record_ids, target_topic, redrive_to, reset_retry, rate_per_second,
		confirmed_count, status, total, done, failed, cursor_id, lease_owner, lease_until,
		error, created_by, request_id, created_at, started_at, updated_at, finished_at, topics, edit, skipped,
		in_flight_at_cancel;

-- name: ClaimRecordJob :one
-- ClaimRecordJob is ClaimJob for jobs that name their records.
WITH next AS (
		SELECT id AS next_id FROM jobs
		WHERE (status = 'pending' OR status = 'running' AND lease_until <= @now::timestamptz) AND record_ids IS NOT NULL
		ORDER BY id LIMIT 1
		FOR UPDATE SKIP LOCKED)
	UPDATE jobs SET status = 'running', lease_owner = @owner::text, lease_until = @lease_until::timestamptz,
		started_at = coalesce(started_at, @now), updated_at = @now
	FROM next WHERE id = next_id
	RETURNING id, kind, filter, record_ids, target_topic, redrive_to, reset_retry, rate_per_second,
		confirmed_count, status, total, done, failed, cursor_id, lease_owner, lease_until,
		error, created_by, request_id, created_at, started_at, updated_at, finished_at, topics, edit, skipped,
		in_flight_at_cancel;

-- name: UpdateJobProgress :execrows
-- UpdateJobProgress: progressed_at moves only when a record was settled (the right-hand
-- side reads the row as it was).
UPDATE jobs SET total = sqlc.arg(total), done = sqlc.arg(done), failed = sqlc.arg(failed), cursor_id = sqlc.arg(cursor_id),
		lease_until = sqlc.arg(lease_until)::timestamptz, updated_at = sqlc.arg(now)::timestamptz, skipped = sqlc.arg(skipped),
		progressed_at = CASE WHEN done + failed + skipped <> sqlc.arg(done)::bigint + sqlc.arg(failed)::bigint + sqlc.arg(skipped)::bigint
			THEN sqlc.arg(now) ELSE progressed_at END
	WHERE id = sqlc.arg(id) AND status = 'running' AND lease_owner = sqlc.arg(owner)::text;

-- name: CancelJob :one
UPDATE jobs SET status = 'cancelled', lease_owner = NULL, lease_until = NULL,
		updated_at = @now, finished_at = @now
	WHERE id = @id AND status IN ('pending', 'running')
	RETURNING id, kind, filter, record_ids, target_topic, redrive_to, reset_retry, rate_per_second,
		confirmed_count, status, total, done, failed, cursor_id, lease_owner, lease_until,
		error, created_by, request_id, created_at, started_at, updated_at, finished_at, topics, edit, skipped,
		in_flight_at_cancel;

-- name: SettleCancelledJob :one
-- SettleCancelledJob runs once, for a job cancelled while it ran.
UPDATE jobs SET done = @done, failed = @failed, skipped = @skipped, cursor_id = @cursor_id,
		in_flight_at_cancel = @in_flight::bigint, updated_at = @now
	WHERE id = @id AND status = 'cancelled' AND in_flight_at_cancel IS NULL
	RETURNING id, kind, filter, record_ids, target_topic, redrive_to, reset_retry, rate_per_second,
		confirmed_count, status, total, done, failed, cursor_id, lease_owner, lease_until,
		error, created_by, request_id, created_at, started_at, updated_at, finished_at, topics, edit, skipped,
		in_flight_at_cancel;

-- name: FinishJob :one
UPDATE jobs SET status = @status, error = @error, lease_owner = NULL, lease_until = NULL,
		updated_at = @now, finished_at = @now
	WHERE id = @id AND status = 'running' AND lease_owner = @owner::text
	RETURNING id, kind, filter, record_ids, target_topic, redrive_to, reset_retry, rate_per_second,
		confirmed_count, status, total, done, failed, cursor_id, lease_owner, lease_until,
		error, created_by, request_id, created_at, started_at, updated_at, finished_at, topics, edit, skipped,
		in_flight_at_cancel;

-- name: ReleaseJob :exec
UPDATE jobs SET lease_until = @now::timestamptz, updated_at = @now
	WHERE id = @id AND status = 'running' AND lease_owner = @owner::text;
