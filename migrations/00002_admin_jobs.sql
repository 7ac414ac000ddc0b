-- Admin API additions: the reason an operator gives (discards) in the audit log, and
-- idempotency keys on jobs so that a retried replay request returns the job it created.

-- +goose Up
ALTER TABLE audit_log ADD COLUMN reason text NOT NULL DEFAULT '';
ALTER TABLE jobs ADD COLUMN idempotency_key text;
CREATE UNIQUE INDEX jobs_idempotency_idx ON jobs (created_by, idempotency_key)
    WHERE idempotency_key IS NOT NULL;
-- A job resumed after a crash finds the rows it already touched.
CREATE INDEX dead_letters_job_idx ON dead_letters (job_id, id) WHERE job_id IS NOT NULL;

-- +goose Down
DROP INDEX dead_letters_job_idx;
DROP INDEX jobs_idempotency_idx;
ALTER TABLE jobs DROP COLUMN idempotency_key;
ALTER TABLE audit_log DROP COLUMN reason;
