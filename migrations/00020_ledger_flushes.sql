-- The worker writes its ledger positions without waiting for PostgreSQL to flush them
-- (an asynchronous commit), and commits offsets to Kafka only up to positions that a
-- later synchronous commit made durable. That synchronous commit writes this row (one per
-- consumer group): a row of its own, so that its wait for the flush (and for synchronous
-- standbys) holds no lock a position write needs.

-- +goose Up
CREATE TABLE ledger_flushes (
    consumer_group text        PRIMARY KEY,
    flushed_at     timestamptz NOT NULL
);

-- +goose Down
DROP TABLE ledger_flushes;
