-- Replay leases out of the wide row. A record a job is replaying has one row here: which
-- job holds it, under which holder and until when, and the replay id its produce carries.
-- Leasing a page of records inserts narrow rows here instead of rewriting each ~1.3 KB
-- dead_letters row and its eight index entries, and the row changes once per replayed
-- record (to replayed, with where it was produced; or parked with the reason it cannot
-- go) instead of twice. A record is "replaying" exactly when it has a row here; its
-- dead_letters.status keeps the status it had (parked, or scheduled with its due time),
-- so returning it where it was is deleting its lease. A scheduled record also carries the
-- lease in dead_letters.lease_owner/lease_until, so that no redrive worker claims it.
--
-- No foreign key: a check per inserted row would cost what the table saves, and only
-- finished records (redriven, replayed, discarded) are ever deleted, never a leased one.
--
-- Rows left replaying by a runner of an earlier version move here, keeping their replay
-- id, and their dead_letters row goes back to the status it had. dead_letters.prior_status
-- (00009) is no longer written.

-- +goose Up
CREATE TABLE replay_leases (
    record_id bigint      PRIMARY KEY,
    job_id    bigint,
    owner     text        NOT NULL,
    until     timestamptz NOT NULL,
    -- NULL: a lease taken outside a job without a replay id.
    replay_id text
);
-- No other index: the table holds only the records being replayed right now (a job keeps
-- at most ten thousand in flight), so the sweeper and a resumed job read it whole.
--
-- dead_letters_job_idx (00002) goes: a resumed job walks its records by id, and the index
-- was one more entry written by every change of a row that has a job.
DROP INDEX dead_letters_job_idx;

INSERT INTO replay_leases (record_id, job_id, owner, until, replay_id)
    SELECT id, job_id, coalesce(lease_owner, ''), coalesce(lease_until, '-infinity'),
        replay_id
    FROM dead_letters WHERE status = 'replaying';
UPDATE dead_letters SET
    status = CASE WHEN prior_status = 'scheduled' AND due_at IS NOT NULL THEN 'scheduled' ELSE 'parked' END,
    lease_owner = CASE WHEN prior_status = 'scheduled' AND due_at IS NOT NULL THEN coalesce(lease_owner, '') END,
    lease_until = CASE WHEN prior_status = 'scheduled' AND due_at IS NOT NULL THEN coalesce(lease_until, '-infinity') END,
    prior_status = NULL
    WHERE status = 'replaying';

-- +goose Down
CREATE INDEX dead_letters_job_idx ON dead_letters (job_id, id) WHERE job_id IS NOT NULL;
UPDATE dead_letters d SET status = 'replaying', prior_status = d.status,
    lease_owner = l.owner, lease_until = l.until, job_id = l.job_id, replay_id = l.replay_id
    FROM replay_leases l WHERE l.record_id = d.id;
DROP TABLE replay_leases;
