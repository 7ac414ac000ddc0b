-- name: Stats :many
SELECT dlq_topic, coalesce(original_topic, '')::text AS original_topic, reason,
		(CASE (SELECT l.replayed_at IS NULL FROM replay_states l WHERE l.record_id = dead_letters.id)
		WHEN true THEN 'replaying' WHEN false THEN 'replayed' ELSE dead_letters.status END)::text AS status,
		count(*)
	FROM dead_letters GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4;

-- name: OldestParked :one
-- OldestParked: the first parked id is the oldest parked row, up to clock skew between
-- instances: one index probe instead of a scan.
SELECT stored_at FROM dead_letters WHERE status = 'parked' AND NOT EXISTS (SELECT 1 FROM replay_leases l WHERE l.record_id = dead_letters.id) ORDER BY id LIMIT 1;

-- name: StoredOverTime :many
-- StoredOverTime: bucket is hour or day; topics NULL counts every topic. The BRIN index on
-- stored_at reads only the recent part of the table.
SELECT date_trunc(@bucket::text, stored_at, 'UTC')::timestamptz AS start, count(*) AS stored,
		count(*) FILTER (WHERE status = 'parked' AND NOT EXISTS (SELECT 1 FROM replay_leases l WHERE l.record_id = dead_letters.id)) AS parked
	FROM dead_letters WHERE stored_at >= @since::timestamptz AND (@topics::text[] IS NULL OR original_topic = ANY(@topics))
	GROUP BY 1 ORDER BY 1;

-- name: Backlog :many
SELECT route, status, reason, count(*) FROM dead_letters
	WHERE status IN ('parked', 'scheduled') AND NOT EXISTS (SELECT 1 FROM replay_leases l WHERE l.record_id = dead_letters.id) GROUP BY 1, 2, 3;

-- name: JobGauges :many
SELECT kind, status, count(*),
		extract(epoch FROM sqlc.arg(now)::timestamptz - min(created_at))::float8 AS waited_seconds,
		extract(epoch FROM sqlc.arg(now)::timestamptz - min(coalesce(progressed_at, started_at, created_at)))::float8 AS stalled_seconds
	FROM jobs WHERE status IN ('pending', 'running') GROUP BY kind, status ORDER BY kind, status;
