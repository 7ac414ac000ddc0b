-- A replay's outcome first lands in its narrow lease row. Finishing a replay used to
-- rewrite the record's ~1.3 KB dead_letters row and insert one entry in each of its seven
-- indexes, inside the job: 25-140 us per record on a two-core machine, more than a raw
-- select-and-produce loop spends on the whole record. Now it fills these columns of the
-- record's replay_leases row instead, an update of a ~150-byte row that changes no
-- indexed column (a HOT update), and the record reads as replayed from then on (every
-- reader derives the status from the lease, as it already did for replaying). Once the
-- job has ended, the runner folds each replayed lease into its dead_letters row (status
-- replayed, with its job, replay id, produced position and change time) and deletes it,
-- in batches, so that the table holds only the records of running jobs and the outcomes
-- not yet folded.

--
-- An audit row's records are also kept as the runs of consecutive ids they make up
-- (record_ranges), and a record's history finds its rows through a GiST index on them
-- instead of the GIN index on record_ids (00010): that index took one entry per record, and
-- a job writes two rows of a thousand records per batch (20-30 us per record on a busy
-- two-core machine, as much as the rest of the job's bookkeeping); a job's page of ids is
-- one range or a few. Existing rows get theirs here, once.

-- +goose Up
ALTER TABLE replay_leases
    ADD COLUMN replayed_at        timestamptz,
    ADD COLUMN replayed_by        text,
    ADD COLUMN target_topic       text,
    ADD COLUMN produced_partition integer,
    ADD COLUMN produced_offset    bigint;

ALTER TABLE audit_log ADD COLUMN record_ranges int8multirange;
UPDATE audit_log SET record_ranges = (SELECT range_agg(int8range(id, id, '[]')) FROM unnest(record_ids) id)
    WHERE cardinality(record_ids) > 0;
CREATE INDEX audit_log_record_ranges_idx ON audit_log USING gist (record_ranges);
DROP INDEX audit_log_record_ids_idx;

-- +goose Down
CREATE INDEX audit_log_record_ids_idx ON audit_log USING gin (record_ids);
DROP INDEX audit_log_record_ranges_idx;
ALTER TABLE audit_log DROP COLUMN record_ranges;
UPDATE dead_letters d SET status = 'replayed', lease_owner = NULL, lease_until = NULL,
    job_id = l.job_id, replay_id = l.replay_id, target_topic = l.target_topic,
    produced_partition = l.produced_partition, produced_offset = l.produced_offset,
    changed_at = l.replayed_at, changed_by = l.replayed_by
    FROM replay_leases l WHERE l.record_id = d.id AND l.replayed_at IS NOT NULL;
DELETE FROM replay_leases WHERE replayed_at IS NOT NULL;
ALTER TABLE replay_leases
    DROP COLUMN replayed_at,
    DROP COLUMN replayed_by,
    DROP COLUMN target_topic,
    DROP COLUMN produced_partition,
    DROP COLUMN produced_offset;
