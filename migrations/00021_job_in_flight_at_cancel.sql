-- A replay job runs ahead of its acknowledgements: when it is cancelled, records it
-- already handed to the producer still reach the target. Its holder settles them, counts
-- each that arrived in done, and then records how many were in flight when it learned of
-- the cancel (NULL: not cancelled while running, or not settled yet).

-- +goose Up
ALTER TABLE jobs ADD COLUMN in_flight_at_cancel bigint;

-- +goose Down
ALTER TABLE jobs DROP COLUMN in_flight_at_cancel;
