-- The parking store: dead-letter records waiting on time (scheduled) or on a human (parked),
-- redrive runs with their per-partition ledger, operator jobs, route controls and the audit log.
-- Statuses and kinds are text with CHECK constraints rather than enums: adding a value is a
-- one-line migration that needs no ALTER TYPE outside a transaction.

-- +goose Up
CREATE TABLE dead_letters (
    id                 bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    -- Where the record sits in the DLQ; unique, which makes storing idempotent.
    dlq_topic          text        NOT NULL,
    dlq_partition      integer     NOT NULL,
    dlq_offset         bigint      NOT NULL,
    -- Where it came from; NULL when the headers did not say (reason unroutable).
    original_topic     text,
    original_partition integer,
    original_offset    bigint,
    original_timestamp timestamptz,
    record_timestamp   timestamptz NOT NULL,
    -- NULL and empty are different records (a tombstone is a NULL value).
    key                bytea,
    value              bytea,
    -- Headers in order, duplicates kept. Keys are bytea too: Kafka allows any bytes and
    -- text would reject invalid UTF-8 and NUL. A NULL element is a NULL header value.
    header_keys        bytea[]     NOT NULL,
    header_values      bytea[]     NOT NULL,
    retry_count        integer     NOT NULL,
    error_class        text        NOT NULL,
    error_message      text        NOT NULL,
    reason             text        NOT NULL,
    status             text        NOT NULL,
    route              text        NOT NULL,
    due_at             timestamptz,
    -- Lease: who holds the row (a claimed scheduled row or a replaying row) and until when.
    lease_owner        text,
    lease_until        timestamptz,
    -- Where the record was finally produced (redriven or replayed).
    target_topic       text,
    produced_partition integer,
    produced_offset    bigint,
    replay_id          text,
    job_id             bigint,
    stored_at          timestamptz NOT NULL,
    changed_at         timestamptz NOT NULL,
    changed_by         text        NOT NULL,
    CONSTRAINT dead_letters_dlq_unique UNIQUE (dlq_topic, dlq_partition, dlq_offset),
    CONSTRAINT dead_letters_status_check CHECK (
        status IN ('scheduled', 'redriven', 'parked', 'replaying', 'replayed', 'discarded')),
    CONSTRAINT dead_letters_reason_check CHECK (reason ~ '^[a-z][a-z_]*$'),
    CONSTRAINT dead_letters_headers_check CHECK (
        cardinality(header_keys) = cardinality(header_values)),
    CONSTRAINT dead_letters_due_check CHECK (status <> 'scheduled' OR due_at IS NOT NULL),
    CONSTRAINT dead_letters_lease_check CHECK ((lease_owner IS NULL) = (lease_until IS NULL))
);

-- Listing is keyset-paginated on id DESC; each index ends in id so that a deep page is an
-- index range scan that starts at the cursor, as cheap as the first page. Every index
-- slows parking down, so only the two most selective filters get one; the others (route,
-- reason, error class, DLQ topic, error text) are checked on the rows these indexes yield.
CREATE INDEX dead_letters_status_idx ON dead_letters (status, id);
CREATE INDEX dead_letters_original_topic_idx ON dead_letters (original_topic, status, id);
-- Keys may be larger than a btree entry allows; a hash index takes any size.
CREATE INDEX dead_letters_key_idx ON dead_letters USING hash (key);
-- Partial indexes cost nothing when parking: claiming scans only scheduled rows in due
-- order, retention only finished rows by age.
CREATE INDEX dead_letters_due_idx ON dead_letters (due_at, id) WHERE status = 'scheduled';
CREATE INDEX dead_letters_finished_idx ON dead_letters (changed_at)
    WHERE status IN ('redriven', 'replayed', 'discarded');

CREATE TABLE redrive_runs (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    route       text        NOT NULL,
    worker_id   text        NOT NULL,
    status      text        NOT NULL,
    error       text        NOT NULL DEFAULT '',
    started_at  timestamptz NOT NULL,
    finished_at timestamptz,
    CONSTRAINT redrive_runs_status_check CHECK (status IN ('running', 'succeeded', 'failed'))
);
CREATE INDEX redrive_runs_route_idx ON redrive_runs (route, id);

-- One row per committed DLQ offset range [from_offset, to_offset) of a run. Every offset in
-- the range is accounted for by exactly one outcome (offsets absent from a compacted or
-- transactional topic count as skipped), so the sum of the outcomes equals the range length.
CREATE TABLE run_ledger (
    run_id        bigint      NOT NULL REFERENCES redrive_runs (id) ON DELETE CASCADE,
    dlq_topic     text        NOT NULL,
    dlq_partition integer     NOT NULL,
    from_offset   bigint      NOT NULL,
    to_offset     bigint      NOT NULL,
    redriven      bigint      NOT NULL,
    scheduled     bigint      NOT NULL,
    parked        bigint      NOT NULL,
    skipped       bigint      NOT NULL,
    errors        bigint      NOT NULL,
    recorded_at   timestamptz NOT NULL,
    PRIMARY KEY (run_id, dlq_topic, dlq_partition, from_offset),
    CONSTRAINT run_ledger_range_check CHECK (from_offset <= to_offset),
    CONSTRAINT run_ledger_counts_check CHECK (
        redriven >= 0 AND scheduled >= 0 AND parked >= 0 AND skipped >= 0 AND errors >= 0)
);

CREATE TABLE jobs (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    kind            text        NOT NULL,
    -- Either a filter or explicit record ids selects the records.
    filter          jsonb,
    record_ids      bigint[],
    target_topic    text        NOT NULL DEFAULT '',
    reset_retry     boolean     NOT NULL DEFAULT false,
    rate_per_second integer     NOT NULL DEFAULT 0,
    -- The count the operator saw in the dry run and confirmed.
    confirmed_count bigint      NOT NULL DEFAULT 0,
    status          text        NOT NULL,
    total           bigint      NOT NULL DEFAULT 0,
    done            bigint      NOT NULL DEFAULT 0,
    failed          bigint      NOT NULL DEFAULT 0,
    -- Last processed dead_letters.id: a crashed job resumes after it.
    cursor_id       bigint      NOT NULL DEFAULT 0,
    lease_owner     text,
    lease_until     timestamptz,
    error           text        NOT NULL DEFAULT '',
    created_by      text        NOT NULL,
    request_id      text        NOT NULL DEFAULT '',
    created_at      timestamptz NOT NULL,
    started_at      timestamptz,
    updated_at      timestamptz NOT NULL,
    finished_at     timestamptz,
    CONSTRAINT jobs_kind_check CHECK (kind IN ('replay', 'discard')),
    CONSTRAINT jobs_status_check CHECK (
        status IN ('pending', 'running', 'succeeded', 'failed', 'cancelled')),
    CONSTRAINT jobs_selector_check CHECK ((filter IS NULL) <> (record_ids IS NULL))
);
-- Claiming looks only at unfinished jobs.
CREATE INDEX jobs_claim_idx ON jobs (id) WHERE status IN ('pending', 'running');

CREATE TABLE route_controls (
    route            text        PRIMARY KEY,
    paused           boolean     NOT NULL DEFAULT false,
    run_requested_at timestamptz,
    updated_by       text        NOT NULL,
    updated_at       timestamptz NOT NULL
);

CREATE TABLE audit_log (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at           timestamptz NOT NULL,
    actor        text        NOT NULL,
    action       text        NOT NULL,
    record_ids   bigint[],
    filter       jsonb,
    job_id       bigint,
    route        text,
    affected     bigint      NOT NULL,
    outcome      text        NOT NULL,
    request_id   text        NOT NULL DEFAULT ''
);

-- +goose Down
DROP TABLE audit_log;
DROP TABLE route_controls;
DROP TABLE jobs;
DROP TABLE run_ledger;
DROP TABLE redrive_runs;
DROP TABLE dead_letters;
