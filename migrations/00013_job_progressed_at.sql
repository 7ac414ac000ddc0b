-- When a running job's progress (done + failed + skipped) last moved. updated_at moves
-- with every heartbeat, progress or not, so a stuck job needs a column of its own: the
-- worker exports the longest stall as dlq_jobs_stalled_seconds (alert DLQJobStuck).

-- +goose Up
ALTER TABLE jobs ADD COLUMN progressed_at timestamptz;

-- +goose Down
ALTER TABLE jobs DROP COLUMN progressed_at;
