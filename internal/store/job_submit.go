package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/dlqops/dlq/internal/store/dbsqlc"
)

// An operator's job request: validated, made idempotent per actor, bounded per actor, and
// reserving the records it names.

// ErrIdempotencyKeyReused: the idempotency key was used for a different request.
var ErrIdempotencyKeyReused = fmt.Errorf("%w: idempotency key used for another request", ErrConflict)

// JobRequest is a job as the admin API submits it.
type JobRequest struct {
	JobSpec
	// Reason is the operator's reason, kept in the audit row.
	Reason string
	// IdempotencyKey, when set, makes a retried request return the job the first one
	// created (per actor).
	IdempotencyKey string
	// MaxActive, when positive, bounds the actor's pending and running jobs: one more is
	// ErrTooManyJobs.
	MaxActive int
}

// SubmitJob creates a pending job and its audit row in one transaction. A job that names
// record ids reserves them: every record must exist (ErrNotFound) and be parked or
// scheduled and not selected by another pending or running job (ErrConflict), so that two
// replays or discards of one record are never both accepted. Either every record is
// reserved or nothing is written.
//
// With an IdempotencyKey this actor used before, SubmitJob returns that job and replayed
// true, or ErrConflict when the earlier request asked for something else. With MaxActive,
// a job beyond the actor's active ones is ErrTooManyJobs.
func (s *Jobs) SubmitJob(ctx context.Context, req JobRequest, actor Actor) (job Job, replayed bool, err error) {
	if err := validateJobSpec(&req.JobSpec); err != nil {
		return Job{}, false, err
	}
	ids := slices.Clone(req.RecordIDs)
	slices.Sort(ids)
	ids = slices.Compact(ids)
	if req.RecordIDs != nil {
		req.RecordIDs = ids
	}
	now := s.now()
	err = s.inTx(ctx, func(tx pgx.Tx) error {
		if req.IdempotencyKey != "" {
			prev, err := jobByIdempotencyKey(ctx, tx, actor.Name, req.IdempotencyKey)
			switch {
			case err == nil:
				if !sameSpec(prev.JobSpec, req.JobSpec) {
					return ErrIdempotencyKeyReused
				}
				job, replayed = prev, true
				return nil
			case !errors.Is(err, pgx.ErrNoRows):
				return err
			}
		}
		if req.MaxActive > 0 {
			// The lock orders concurrent submissions of one actor, so the count holds.
			if err := queries.LockActor(ctx, tx, actor.Name); err != nil {
				return err
			}
			active, err := queries.CountActiveJobs(ctx, tx, actor.Name)
			if err != nil {
				return err
			}
			if active >= int64(req.MaxActive) {
				return fmt.Errorf("%d pending or running jobs of %s: %w", active, actor.Name, ErrTooManyJobs)
			}
		}
		topics := filterTopics(req.Filter)
		if len(ids) > 0 {
			if err := lockReservable(ctx, tx, ids, now); err != nil {
				return err
			}
			var err error
			if topics, err = queries.RecordTopics(ctx, tx, ids); err != nil {
				return err
			}
		}
		filter, err := marshalNullable(req.Filter)
		if err != nil {
			return err
		}
		edit, err := marshalNullable(req.Edit)
		if err != nil {
			return err
		}
		params := dbsqlc.SubmitJobParams{Kind: string(req.Kind), Filter: filter, RecordIds: req.RecordIDs, TargetTopic: req.TargetTopic,
			RedriveTo: req.RedriveTo, ResetRetry: req.ResetRetry, RatePerSecond: int32(req.RatePerSecond), ConfirmedCount: req.ConfirmedCount,
			CreatedBy: actor.Name, RequestID: actor.RequestID, Now: now, Topics: topics, Edit: edit}
		if req.IdempotencyKey != "" {
			params.IdempotencyKey = &req.IdempotencyKey
		}
		row, err := queries.SubmitJob(ctx, tx, params)
		if err != nil {
			return err
		}
		if job, err = jobFromRow(dbsqlc.GetJobRow(row)); err != nil {
			return err
		}
		if len(ids) > 0 {
			if err := queries.Reserve(ctx, tx, dbsqlc.ReserveParams{Job: job.ID, Ids: ids}); err != nil {
				return err
			}
		}
		return writeAudit(ctx, tx, AuditEntry{At: now, Actor: actor.Name, RequestID: actor.RequestID, ClientRequestID: actor.ClientRequestID,
			Action: "create_" + string(req.Kind) + "_job", RecordIDs: req.RecordIDs, Filter: req.Filter,
			JobID: job.ID, Affected: req.ConfirmedCount, Outcome: "ok", Reason: req.Reason, Edit: req.Edit})
	})
	if err != nil {
		return Job{}, false, err
	}
	return job, replayed, nil
}

// filterTopics are the original topics a filter can select: its original topic, else the
// topics it is limited to; nil (any) for ids or an unlimited filter.
func filterTopics(f *Filter) []string {
	switch {
	case f == nil:
		return nil
	case f.OriginalTopic != "":
		return []string{f.OriginalTopic}
	case len(f.OriginalTopics) > 0:
		return f.OriginalTopics
	}
	return nil
}

// JobByIdempotencyKey returns the job actor created with key, or ErrNotFound.
func (s *Jobs) JobByIdempotencyKey(ctx context.Context, actor, key string) (Job, error) {
	job, err := jobByIdempotencyKey(ctx, s.pool, actor, key)
	return job, interpretError(err)
}

func jobByIdempotencyKey(ctx context.Context, db dbsqlc.DBTX, actor, key string) (Job, error) {
	row, err := queries.JobByIdempotencyKey(ctx, db, dbsqlc.JobByIdempotencyKeyParams{Actor: actor, IdempotencyKey: key})
	if err != nil {
		return Job{}, err
	}
	return jobFromRow(dbsqlc.GetJobRow(row))
}

func validateJobSpec(spec *JobSpec) error {
	switch {
	case spec.Kind != JobReplay && spec.Kind != JobDiscard:
		return &ValidationError{Field: "kind", Reason: fmt.Sprintf("unknown job kind %q", spec.Kind)}
	case (spec.Filter == nil) == (spec.RecordIDs == nil):
		return &ValidationError{Field: "selector", Reason: "give exactly one of a filter and record ids"}
	case spec.RecordIDs != nil && len(spec.RecordIDs) == 0:
		return &ValidationError{Field: "ids", Reason: "empty"}
	case spec.RatePerSecond < 0:
		return &ValidationError{Field: "rate_per_second", Reason: "negative"}
	case spec.Edit != nil && (spec.Kind != JobReplay || len(spec.RecordIDs) != 1):
		return &ValidationError{Field: "edit", Reason: "only a replay of one record may be edited"}
	case spec.RedriveTo != "" && spec.Kind != JobReplay:
		return &ValidationError{Field: "redrive_to", Reason: "only a replay goes by the group that failed its records"}
	}
	return nil
}

func sameSpec(a, b JobSpec) bool {
	fa, _ := json.Marshal(a.Filter)
	fb, _ := json.Marshal(b.Filter)
	ea, _ := json.Marshal(a.Edit)
	eb, _ := json.Marshal(b.Edit)
	return a.Kind == b.Kind && string(fa) == string(fb) && string(ea) == string(eb) && slices.Equal(a.RecordIDs, b.RecordIDs) &&
		a.TargetTopic == b.TargetTopic && a.RedriveTo == b.RedriveTo && a.ResetRetry == b.ResetRetry && a.RatePerSecond == b.RatePerSecond
}

// lockReservable locks the records and checks that each can be reserved. Their lease
// keys and rows are taken first (lockRecords), and only then checked by a second
// statement: under READ COMMITTED that statement sees a job a concurrent reservation, or
// a lease, committed while we waited.
func lockReservable(ctx context.Context, tx pgx.Tx, ids []int64, now time.Time) error {
	n, err := lockRecords(ctx, tx, ids)
	if err != nil {
		return err
	}
	if n != len(ids) {
		return fmt.Errorf("%d of %d records: %w", len(ids)-n, len(ids), ErrNotFound)
	}
	blocked, err := queries.Unreservable(ctx, tx, dbsqlc.UnreservableParams{Ids: ids, Now: now})
	if err != nil {
		return err
	}
	if len(blocked) > 0 {
		return fmt.Errorf("%w: records %v are not parked or scheduled, or another job holds them", ErrConflict, blocked)
	}
	return nil
}
