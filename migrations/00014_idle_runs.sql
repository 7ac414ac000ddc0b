-- Idle runs: a run that finds nothing to do (no DLQ record to read, no due scheduled
-- record) writes no row of its own. The route's consecutive idle runs are one row, marked
-- idle, whose finished_at moves with each of them: health and the runs list see the route
-- run, and the table does not grow by a row per schedule tick.

-- +goose Up
ALTER TABLE redrive_runs ADD COLUMN idle boolean NOT NULL DEFAULT false;

-- +goose Down
ALTER TABLE redrive_runs DROP COLUMN idle;
