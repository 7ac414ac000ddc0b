-- route_controls.schedule: the cron schedule a dlq-worker runs the route on, written with
-- its next run, so operators see how often a route runs beside when it last ran.

-- +goose Up
ALTER TABLE route_controls ADD COLUMN schedule text;

-- +goose Down
ALTER TABLE route_controls DROP COLUMN schedule;
