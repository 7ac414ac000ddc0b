-- The ledger is the truth: where each consumer group last committed, written
-- by the worker before each commit, so that a committed offset that moved without us
-- (reset, lost, rewound) is seen; and the DLQ offset ranges that were never read (a
-- forward jump, records deleted below the log start) or read again (a backward jump).

-- +goose Up
CREATE TABLE ledger_positions (
    consumer_group   text        NOT NULL,
    dlq_topic        text        NOT NULL,
    dlq_partition    integer     NOT NULL,
    -- Every offset below it is accounted for in run_ledger; only ever moves forward.
    committed_offset bigint      NOT NULL,
    updated_at       timestamptz NOT NULL,
    PRIMARY KEY (consumer_group, dlq_topic, dlq_partition)
);

CREATE TABLE ledger_gaps (
    id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    consumer_group text        NOT NULL,
    route          text        NOT NULL,
    dlq_topic      text        NOT NULL,
    dlq_partition  integer     NOT NULL,
    from_offset    bigint      NOT NULL,
    to_offset      bigint      NOT NULL,
    cause          text        NOT NULL,
    -- true: the range was never read (lost); false: it was read again.
    lost           boolean     NOT NULL,
    recorded_at    timestamptz NOT NULL,
    CONSTRAINT ledger_gaps_range_check CHECK (from_offset < to_offset),
    CONSTRAINT ledger_gaps_cause_check CHECK (cause IN ('jump', 'backward', 'below_log_start'))
);
CREATE INDEX ledger_gaps_group_idx ON ledger_gaps (consumer_group, dlq_topic, dlq_partition, from_offset);

-- +goose Down
DROP TABLE ledger_gaps;
DROP TABLE ledger_positions;
