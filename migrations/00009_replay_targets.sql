-- Replays refused up front and records returned where they were.
--
-- route_controls.allowed_targets: the allowed_targets of each route as the job runners of
-- dlq-worker apply them, published when a runner starts, so that dlq-admin refuses a
-- replay to a forbidden topic before it accepts the job (the runner checks again when it
-- produces). NULL: no runner has published the route's rules yet; the runner decides.
--
-- dead_letters.prior_status: the status (parked or scheduled) a record had when a job
-- leased it for replay, so that a cancel, a failed produce or the sweeper puts it back
-- there. NULL outside a replay.

-- +goose Up
ALTER TABLE route_controls ADD COLUMN allowed_targets text[];
ALTER TABLE dead_letters ADD COLUMN prior_status text;

-- +goose Down
ALTER TABLE dead_letters DROP COLUMN prior_status;
ALTER TABLE route_controls DROP COLUMN allowed_targets;
