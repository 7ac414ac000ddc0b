package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/dlqops/dlq/internal/store/dbsqlc"
)

// Each transition is one conditional UPDATE (it changes the row only from the states that
// allow it) plus its audit row, in one transaction. When the condition fails the audit row
// records the refusal and the caller gets ErrConflict (or ErrNotFound).

// Discard drops a parked record, or a scheduled one that no worker is redriving.
func (s *Records) Discard(ctx context.Context, id int64, actor Actor) (Record, error) {
	return s.transition(ctx, id, actor, "discard", 0, func(tx pgx.Tx, now time.Time) (dbsqlc.GetRecordRow, error) {
		row, err := queries.Discard(ctx, tx, dbsqlc.DiscardParams{Now: now, Actor: actor.Name, ID: id})
		return dbsqlc.GetRecordRow(row), err
	})
}

// RetryNow makes a scheduled record due now.
func (s *Records) RetryNow(ctx context.Context, id int64, actor Actor) (Record, error) {
	return s.transition(ctx, id, actor, "retry_now", 0, func(tx pgx.Tx, now time.Time) (dbsqlc.GetRecordRow, error) {
		row, err := queries.RetryNow(ctx, tx, dbsqlc.RetryNowParams{Now: now, Actor: actor.Name, ID: id})
		return dbsqlc.GetRecordRow(row), err
	})
}

// ReplayLease is what a job worker holds while it replays a record.
type ReplayLease struct {
	// Owner identifies the worker; FinishReplay and AbortReplay must present it.
	Owner    string
	Duration time.Duration
	JobID    int64
	ReplayID string
}

// BeginReplay leases a parked record, a scheduled one that no worker is redriving, or one
// whose replay lease expired (its worker died), for replay. Only one worker can hold a
// record at a time, so a record is never replayed twice concurrently.
func (s *Records) BeginReplay(ctx context.Context, id int64, lease ReplayLease, actor Actor) (Record, error) {
	if lease.Owner == "" || lease.Duration <= 0 {
		return Record{}, &ValidationError{Field: "lease", Reason: "owner and a positive duration are required"}
	}
	return s.audited(ctx, id, actor, "begin_replay", lease.JobID, func(tx pgx.Tx, now time.Time) (Record, int64, error, error) {
		var job *int64
		if lease.JobID != 0 {
			job = &lease.JobID
		}
		var replayID *string
		if lease.ReplayID != "" {
			replayID = &lease.ReplayID
		}
		_, begun, err := beginReplays(ctx, tx, []int64{id}, now, actor.Name, lease.Owner, now.Add(lease.Duration), job, nil, replayID)
		if err != nil {
			return Record{}, 0, nil, err
		}
		return s.reread(ctx, tx, id, len(begun))
	})
}

// FinishReplay records where a replaying record was produced.
func (s *Records) FinishReplay(ctx context.Context, id int64, owner string, produced Coordinates, actor Actor) (Record, error) {
	return s.leaseTransition(ctx, id, actor, "finish_replay", 0, func(tx pgx.Tx, now time.Time) ([]int64, error) {
		return queries.FinishReplays(ctx, tx, dbsqlc.FinishReplaysParams{Now: now, Actor: actor.Name, Ids: []int64{id}, Owner: owner,
			Topics: []string{produced.Topic}, Partitions: []int32{produced.Partition}, Offsets: []int64{produced.Offset}})
	})
}

// AbortReplay returns a replaying record to the status it had when it was leased (parked,
// or scheduled with its due time), e.g. when its job was cancelled.
func (s *Records) AbortReplay(ctx context.Context, id int64, owner string, actor Actor) (Record, error) {
	return s.leaseTransition(ctx, id, actor, "abort_replay", 0, func(tx pgx.Tx, now time.Time) ([]int64, error) {
		return queries.AbortReplays(ctx, tx, dbsqlc.AbortReplaysParams{Ids: []int64{id}, Owner: owner, Now: now, Actor: actor.Name})
	})
}

// leaseTransition is transition for the statements of a replay lease, which return the
// ids they changed and change the lease table too: the record is read again after them,
// as a statement does not see its own changes to another table.
func (s *Records) leaseTransition(ctx context.Context, id int64, actor Actor, action string, jobID int64,
	change func(tx pgx.Tx, now time.Time) ([]int64, error)) (Record, error) {
	return s.audited(ctx, id, actor, action, jobID, func(tx pgx.Tx, now time.Time) (Record, int64, error, error) {
		changed, err := change(tx, now)
		if err != nil {
			return Record{}, 0, nil, err
		}
		return s.reread(ctx, tx, id, len(changed))
	})
}

// reread reads record id after a lease statement changed n rows, for audited.
func (s *Records) reread(ctx context.Context, tx pgx.Tx, id int64, n int) (Record, int64, error, error) {
	row, err := queries.GetRecord(ctx, tx, id)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return Record{}, int64(n), ErrNotFound, nil
	case err != nil:
		return Record{}, 0, nil, err
	}
	rec := recordFromRow(row)
	if n == 0 {
		return rec, 0, ErrConflict, nil
	}
	return rec, int64(n), nil, nil
}

// transition runs change, a conditional UPDATE of record id that returns it, or
// pgx.ErrNoRows when the record's state does not allow it. The record's lease key and row
// are taken first (lockRecords), in statements of their own, so that change sees a replay
// lease committed while it waited.
func (s *Records) transition(ctx context.Context, id int64, actor Actor, action string, jobID int64,
	change func(tx pgx.Tx, now time.Time) (dbsqlc.GetRecordRow, error)) (Record, error) {
	return s.audited(ctx, id, actor, action, jobID, func(tx pgx.Tx, now time.Time) (Record, int64, error, error) {
		if _, err := lockRecords(ctx, tx, []int64{id}); err != nil {
			return Record{}, 0, nil, err
		}
		row, err := change(tx, now)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			exists, err := queries.RecordExists(ctx, tx, id)
			if err != nil {
				return Record{}, 0, nil, err
			}
			if !exists {
				return Record{}, 0, ErrNotFound, nil
			}
			return Record{}, 0, ErrConflict, nil
		case err != nil:
			return Record{}, 0, nil, err
		}
		return recordFromRow(row), 1, nil, nil
	})
}

// audited runs change, which reports the record after it, how many rows it changed and
// why it refused (ErrNotFound, ErrConflict), in one transaction with the audit row of
// action on record id; a refusal is returned as an error that wraps it, after the audit
// row is committed.
func (s *Records) audited(ctx context.Context, id int64, actor Actor, action string, jobID int64,
	change func(tx pgx.Tx, now time.Time) (rec Record, affected int64, refused, err error)) (Record, error) {
	var rec Record
	var refused error
	now := s.now()
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		var affected int64
		var err error
		rec, affected, refused, err = change(tx, now)
		if err != nil {
			return err
		}
		auditJob := jobID
		if auditJob == 0 {
			auditJob = rec.JobID
		}
		return writeAudit(ctx, tx, AuditEntry{
			At: now, Actor: actor.Name, RequestID: actor.RequestID, ClientRequestID: actor.ClientRequestID, Action: action,
			RecordIDs: []int64{id}, JobID: auditJob, Affected: affected, Outcome: outcomeOf(refused),
		})
	})
	if err != nil {
		return Record{}, err
	}
	if refused != nil {
		return Record{}, fmt.Errorf("%s record %d: %w", action, id, &refusal{refused})
	}
	return rec, nil
}

func outcomeOf(err error) string {
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, ErrNotFound):
		return "not_found"
	case errors.Is(err, ErrConflict):
		return "conflict"
	default:
		return "error"
	}
}
