-- Operator console and API: the next run of each route as the worker's scheduler has it
-- (written by dlq-worker whenever it changes), and an index for a record's history in the
-- audit log (GET /v1/audit?record_id=…).

-- +goose Up
ALTER TABLE route_controls ADD COLUMN next_run_at timestamptz;
CREATE INDEX audit_log_record_ids_idx ON audit_log USING gin (record_ids);

-- +goose Down
DROP INDEX audit_log_record_ids_idx;
ALTER TABLE route_controls DROP COLUMN next_run_at;
