-- Operator console and API: the next run of each route as the worker's scheduler has it
-- (written by dlq-worker whenever it changes), an index for a record's history in the
-- audit log (GET /v1/audit?record_id=…), and a BRIN index on stored_at for the parked-over-
-- time counts of the last hours and days (rows are appended in stored_at order, so BRIN
-- stays small and costs parking next to nothing, unlike a B-tree).

-- +goose Up
ALTER TABLE route_controls ADD COLUMN next_run_at timestamptz;
CREATE INDEX audit_log_record_ids_idx ON audit_log USING gin (record_ids);
CREATE INDEX dead_letters_stored_at_idx ON dead_letters USING brin (stored_at);

-- +goose Down
DROP INDEX dead_letters_stored_at_idx;
DROP INDEX audit_log_record_ids_idx;
ALTER TABLE route_controls DROP COLUMN next_run_at;
