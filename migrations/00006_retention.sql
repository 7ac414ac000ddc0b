-- Retention: indexes for housekeeping's batched deletes. A run's ledger rows are kept
-- while they are the newest of their DLQ partition, which is checked per row; the audit
-- log is deleted oldest first by time.

-- +goose Up
CREATE INDEX run_ledger_partition_idx ON run_ledger (dlq_topic, dlq_partition, run_id);
CREATE INDEX audit_log_at_idx ON audit_log (at);

-- +goose Down
DROP INDEX audit_log_at_idx;
DROP INDEX run_ledger_partition_idx;
