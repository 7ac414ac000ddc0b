-- A replay's outcome is kept per batch. Finishing a job's batch wrote each record's
-- outcome into its replay_leases row (00016): a thousand row updates per batch, about a
-- quarter of a bulk replay's database work, where a raw produce loop writes nothing. Now
-- leasing a page also inserts one replay_batches row, each lease names it (batch_id) and
-- its place in it (batch_idx, from 1), and finishing the batch writes that one row:
-- when and by whom, and the topic, partition and offset of each record at its place
-- (NULL for a record not produced). A lease is replayed when its batch holds an offset at
-- its place, or every record of its batch was produced (all_produced, which spares the
-- readers unpacking the batch's arrays for each record). Readers see the lease with its
-- outcome through the replay_states view.
--
-- Leases are no longer updated, so their pages no longer keep room for it (00017).
-- Outcomes not folded yet are folded here, as the runner would once their job ended.

-- +goose Up
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
    DROP COLUMN produced_offset,
    ADD COLUMN batch_id  bigint,
    ADD COLUMN batch_idx integer;
ALTER TABLE replay_leases RESET (fillfactor);

-- No foreign key from replay_leases: a check per lease would cost what the batch saves.
-- A batch keeps its job and the records it was asked for (its places), so that the fold
-- moves a whole batch into the records' rows reading its arrays once, and then deletes it.
CREATE TABLE replay_batches (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    job_id      bigint,
    record_ids  bigint[] NOT NULL,
    replayed_at  timestamptz,
    replayed_by  text,
    all_produced boolean NOT NULL DEFAULT false,
    topics      text[],
    partitions  integer[],
    offsets     bigint[]
);

CREATE VIEW replay_states AS
    SELECT l.record_id, l.job_id, l.owner, l.until, l.replay_id,
        b.replayed_at, b.replayed_by, b.topics[l.batch_idx] AS target_topic,
        b.partitions[l.batch_idx] AS produced_partition, b.offsets[l.batch_idx] AS produced_offset
    FROM replay_leases l
    LEFT JOIN replay_batches b ON b.id = l.batch_id AND (b.all_produced OR b.offsets[l.batch_idx] IS NOT NULL);

-- +goose Down
ALTER TABLE replay_leases
    ADD COLUMN replayed_at        timestamptz,
    ADD COLUMN replayed_by        text,
    ADD COLUMN target_topic       text,
    ADD COLUMN produced_partition integer,
    ADD COLUMN produced_offset    bigint;
UPDATE replay_leases l SET replayed_at = s.replayed_at, replayed_by = s.replayed_by,
    target_topic = s.target_topic, produced_partition = s.produced_partition,
    produced_offset = s.produced_offset
    FROM replay_states s WHERE s.record_id = l.record_id AND s.replayed_at IS NOT NULL;
DROP VIEW replay_states;
DROP TABLE replay_batches;
ALTER TABLE replay_leases DROP COLUMN batch_id, DROP COLUMN batch_idx;
ALTER TABLE replay_leases SET (fillfactor = 30);
