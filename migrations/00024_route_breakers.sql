-- A route's breaker as operators see and steer it.
--
-- breaker_override: an operator's forced state, 'open' (the route redrives nothing; its
-- records wait as scheduled) or 'closed' (it redrives whatever comes back); NULL leaves
-- the breaker automatic. The workers poll it with the other route controls, so it holds
-- across worker restarts. breaker_override_reason is the operator's reason, for the banner.
--
-- breaker_state .. breaker_reported_by: the breaker's state as a worker last reported it
-- (closed, open, half_open, forced_open, forced_closed), since when, the share of what the
-- route redrove in the breaker's window that came back, and the worker. NULL until a worker
-- reported; with several workers, the one that reported last.

-- +goose Up
ALTER TABLE route_controls
    ADD COLUMN breaker_override text CHECK (breaker_override IN ('open', 'closed')),
    ADD COLUMN breaker_override_reason text,
    ADD COLUMN breaker_state text,
    ADD COLUMN breaker_since timestamptz,
    ADD COLUMN breaker_returned_ratio double precision,
    ADD COLUMN breaker_reported_by text;

-- +goose Down
ALTER TABLE route_controls
    DROP COLUMN breaker_override,
    DROP COLUMN breaker_override_reason,
    DROP COLUMN breaker_state,
    DROP COLUMN breaker_since,
    DROP COLUMN breaker_returned_ratio,
    DROP COLUMN breaker_reported_by;
