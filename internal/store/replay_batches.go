package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/dlqops/dlq/internal/store/dbsqlc"
)

// A running job changes its records a batch at a time: it leases a page for replay, then
// finishes or aborts the batch, or discards a page, each with one audit row.

// BeginReplays leases the records of ids that can be replayed now for job: parked or
// scheduled (and not claimed by a redrive), held by an earlier holder of the job, or held
// under an expired lease by a job that ended. Each keeps the replay id it was first given
// by the job, "<job>-<record>", so a record produced again after a crash carries the same
// one. It returns the batch the leases form, or ErrConflict when the job is not running
// under owner any more (cancelled, or taken over): a cancel that committed is never
// followed by a lease of its job.
func (s *Jobs) BeginReplays(ctx context.Context, jobID int64, ids []int64, owner string, lease time.Duration, actor Actor) (ReplayBatch, error) {
	if owner == "" || lease <= 0 {
		return ReplayBatch{}, &ValidationError{Field: "lease", Reason: "owner and a positive duration are required"}
	}
	if !slices.IsSorted(ids) {
		return ReplayBatch{}, &ValidationError{Field: "ids", Reason: "must be in ascending order"}
	}
	var batch int64
	var begun map[int64]string
	now := s.now()
	leasePage := func(fresh bool) error {
		return s.inTx(ctx, func(tx pgx.Tx) error {
			if err := queries.BatchSettings(ctx, tx); err != nil {
				return err
			}
			var err error
			prefix := strconv.FormatInt(jobID, 10) + "-"
			if fresh {
				batch, begun, err = beginFreshReplays(ctx, tx, ids, now, actor.Name, owner, now.Add(lease), jobID, prefix)
			} else {
				batch, begun, err = beginReplays(ctx, tx, ids, now, actor.Name, owner, now.Add(lease), &jobID, &prefix, nil)
			}
			if err != nil {
				return err
			}
			leased := make([]int64, 0, len(begun))
			for id := range begun {
				leased = append(leased, id)
			}
			slices.Sort(leased)
			if err := writeAudit(ctx, tx, AuditEntry{At: now, Actor: actor.Name, RequestID: actor.RequestID, ClientRequestID: actor.ClientRequestID,
				Action: "begin_replay", RecordIDs: leased, JobID: jobID, Affected: int64(len(leased)), Outcome: "ok"}); err != nil {
				return err
			}
			// Last, so that the job's row is held only for the commit: the shared lock makes a
			// concurrent cancel wait for these leases to commit, and a job no longer ours (a
			// cancel that committed, or taken over) rolls them back. Taken first, it held the
			// runner's own progress saves back for the whole lease.
			held, err := queries.JobHeld(ctx, tx, dbsqlc.JobHeldParams{ID: jobID, Owner: owner})
			if err != nil {
				return err
			}
			if !held {
				return fmt.Errorf("job %d is not running under %s: %w", jobID, owner, ErrConflict)
			}
			return nil
		})
	}
	// A page whose records no lease holds, which is nearly every page, is leased by a copy
	// of its leases; one that meets a lease key (a lease of another job or of an earlier holder,
	// an outcome not folded yet, a writer's key) is leased again by the statement that
	// takes each case in turn.
	err := leasePage(true)
	if errors.Is(err, errLeaseKeyTaken) {
		err = leasePage(false)
	}
	if err != nil {
		return ReplayBatch{}, err
	}
	return ReplayBatch{ID: batch, IDs: ids, ReplayIDs: begun}, nil
}

// ReplayBatch is a page of a job's records leased together (BeginReplays). Its outcome is
// one row, written once, when the batch is finished (FinishReplays).
type ReplayBatch struct {
	ID int64
	// IDs are the records the batch was asked for: a record's place in the batch is its
	// index here. ReplayIDs has the replay id of each record leased.
	IDs       []int64
	ReplayIDs map[int64]string
}

// FinishReplays marks the records of batch in done as replayed where they were produced,
// with one write for the batch, and returns how many it marked: none when the batch was
// finished already; when job is no longer running under owner (cancelled, taken over),
// only those whose lease is still the batch's (another holder may have taken some).
func (s *Jobs) FinishReplays(ctx context.Context, jobID int64, owner string, batch ReplayBatch, done []Redriven, actor Actor) (int, error) {
	topics := make([]*string, len(batch.IDs))
	partitions := make([]*int32, len(batch.IDs))
	offsets := make([]*int64, len(batch.IDs))
	ids := make([]int64, len(done))
	for i, d := range done {
		at, ok := slices.BinarySearch(batch.IDs, d.ID)
		if !ok {
			return 0, fmt.Errorf("store: record %d is not in replay batch %d", d.ID, batch.ID)
		}
		topics[at], partitions[at], offsets[at] = &done[i].Produced.Topic, &done[i].Produced.Partition, &done[i].Produced.Offset
		ids[i] = d.ID
	}
	slices.Sort(ids)
	var changed []int64
	now := s.now()
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		if err := queries.BatchSettings(ctx, tx); err != nil {
			return err
		}
		// Held, no other holder can have taken a lease of the job's (a lease of a running
		// job goes only to a holder of the job), and the share lock keeps it so until commit.
		held, err := queries.JobHeld(ctx, tx, dbsqlc.JobHeldParams{ID: jobID, Owner: owner})
		if err != nil {
			return err
		}
		finished, err := queries.FinishBatch(ctx, tx, dbsqlc.FinishBatchParams{Now: now, Actor: actor.Name, Topics: topics,
			Partitions: partitions, Offsets: offsets, AllProduced: len(done) == len(batch.ReplayIDs), ID: batch.ID})
		switch {
		case err != nil:
			return err
		case finished == 0:
			changed = nil
		case held:
			changed = ids
		default:
			if changed, err = sorted(queries.LeasesOfBatch(ctx, tx, dbsqlc.LeasesOfBatchParams{Ids: ids, BatchID: batch.ID})); err != nil {
				return err
			}
		}
		return writeAudit(ctx, tx, AuditEntry{At: now, Actor: actor.Name, RequestID: actor.RequestID, ClientRequestID: actor.ClientRequestID,
			Action: "finish_replay", RecordIDs: changed, JobID: jobID, Affected: int64(len(changed)), Outcome: "ok"})
	})
	return len(changed), err
}

// AbortReplays returns records owner replays that were not produced: with reason (why they
// cannot go) they are parked with it; without, each goes back to the status it had when
// its job leased it (parked, or scheduled with its due time), with the reason it had.
func (s *Jobs) AbortReplays(ctx context.Context, jobID int64, owner string, ids []int64, reason Reason, actor Actor) (int, error) {
	return s.batchTransition(ctx, jobID, actor, "abort_replay", ids, nil, func(tx pgx.Tx, now time.Time) ([]int64, error) {
		return queries.AbortReplays(ctx, tx, dbsqlc.AbortReplaysParams{Ids: ids, Owner: owner, Reason: string(reason), Now: now,
			Actor: actor.Name})
	})
}

// DiscardRecords discards the records of ids that are parked or scheduled (and not claimed
// by a redrive or held by a replay) for job, and returns how many it discarded.
func (s *Jobs) DiscardRecords(ctx context.Context, jobID int64, ids []int64, actor Actor) (int, error) {
	return s.batchTransition(ctx, jobID, actor, "discard", ids, func(ctx context.Context, tx pgx.Tx, ids []int64) error {
		_, err := lockRecords(ctx, tx, ids)
		return err
	}, func(tx pgx.Tx, now time.Time) ([]int64, error) {
		return queries.DiscardRecords(ctx, tx, dbsqlc.DiscardRecordsParams{Job: jobID, Now: now, Actor: actor.Name, Ids: ids})
	})
}

// sorted puts the ids a statement returned (those it changed) in order, for the audit
// row, which stores ascending ids as their runs.
func sorted(ids []int64, err error) ([]int64, error) {
	slices.Sort(ids)
	return ids, err
}

// batchTransition runs change, which returns the ids it changed, with one audit row for
// the batch. before, unless nil, runs first with ids: lockRecords takes their lease keys
// and rows, in statements of their own, so that change sees a replay lease committed
// while it waited.
func (s *Jobs) batchTransition(ctx context.Context, jobID int64, actor Actor, action string, ids []int64,
	before func(context.Context, pgx.Tx, []int64) error, change func(tx pgx.Tx, now time.Time) ([]int64, error)) (int, error) {
	var changed []int64
	now := s.now()
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		if err := queries.BatchSettings(ctx, tx); err != nil {
			return err
		}
		if before != nil {
			if err := before(ctx, tx, ids); err != nil {
				return err
			}
		}
		var err error
		if changed, err = sorted(change(tx, now)); err != nil {
			return err
		}
		return writeAudit(ctx, tx, AuditEntry{At: now, Actor: actor.Name, RequestID: actor.RequestID, ClientRequestID: actor.ClientRequestID,
			Action: action, RecordIDs: changed, JobID: jobID, Affected: int64(len(changed)), Outcome: "ok"})
	})
	return len(changed), err
}
