package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
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
			prev, err := scanJob(tx.QueryRow(ctx, sqlJobByIdempotencyKey, actor.Name, req.IdempotencyKey))
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
			if _, err := tx.Exec(ctx, sqlLockActor, actor.Name); err != nil {
				return err
			}
			var active int
			if err := tx.QueryRow(ctx, sqlActiveJobs, actor.Name).Scan(&active); err != nil {
				return err
			}
			if active >= req.MaxActive {
				return fmt.Errorf("%d pending or running jobs of %s: %w", active, actor.Name, ErrTooManyJobs)
			}
		}
		topics := filterTopics(req.Filter)
		if len(ids) > 0 {
			if err := lockReservable(ctx, tx, ids, now); err != nil {
				return err
			}
			if err := tx.QueryRow(ctx, sqlRecordTopics, ids).Scan(&topics); err != nil {
				return err
			}
		}
		var err error
		job, err = scanJob(tx.QueryRow(ctx, sqlSubmitJob, string(req.Kind), req.Filter, req.RecordIDs,
			req.TargetTopic, req.ResetRetry, req.RatePerSecond, req.ConfirmedCount,
			actor.Name, actor.RequestID, now, nullIfEmpty(req.IdempotencyKey), topics, req.Edit))
		if err != nil {
			return err
		}
		if len(ids) > 0 {
			if _, err := tx.Exec(ctx, sqlReserve, ids, job.ID); err != nil {
				return err
			}
		}
		return writeAudit(ctx, tx, AuditEntry{At: now, Actor: actor.Name, RequestID: actor.RequestID, ClientRequestID: actor.ClientRequestID,
			Action: "create_" + string(req.Kind) + "_job", RecordIDs: req.RecordIDs, Filter: req.Filter,
			JobID: job.ID, Affected: req.ConfirmedCount, Outcome: "ok", Reason: req.Reason})
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
	job, err := scanJob(s.pool.QueryRow(ctx, sqlJobByIdempotencyKey, actor, key))
	return job, interpretError(err)
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
	}
	return nil
}

func sameSpec(a, b JobSpec) bool {
	fa, _ := json.Marshal(a.Filter)
	fb, _ := json.Marshal(b.Filter)
	ea, _ := json.Marshal(a.Edit)
	eb, _ := json.Marshal(b.Edit)
	return a.Kind == b.Kind && string(fa) == string(fb) && string(ea) == string(eb) && slices.Equal(a.RecordIDs, b.RecordIDs) &&
		a.TargetTopic == b.TargetTopic && a.ResetRetry == b.ResetRetry && a.RatePerSecond == b.RatePerSecond
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
	var blocked []int64
	rows, err := tx.Query(ctx, sqlUnreservable, ids, now)
	if err != nil {
		return err
	}
	var id int64
	if _, err := pgx.ForEachRow(rows, []any{&id}, func() error { blocked = append(blocked, id); return nil }); err != nil {
		return err
	}
	if len(blocked) > 0 {
		return fmt.Errorf("%w: records %v are not parked or scheduled, or another job holds them", ErrConflict, blocked)
	}
	return nil
}

const sqlSubmitJob = `INSERT INTO jobs (kind, filter, record_ids, target_topic, reset_retry, rate_per_second,
		confirmed_count, status, created_by, request_id, created_at, updated_at, idempotency_key, topics, edit)
	VALUES ($1, $2, $3, $4, $5, $6, $7, 'pending', $8, $9, $10, $10, $11, $12, $13)
	RETURNING ` + jobColumns

// Orders an actor's submissions until commit, so that its count of active jobs holds.
const sqlLockActor = `SELECT pg_advisory_xact_lock(hashtextextended('dlq-jobs:' || $1, 0))`

const sqlActiveJobs = `SELECT count(*) FROM jobs WHERE created_by = $1 AND status IN ('pending', 'running')`

const sqlJobByIdempotencyKey = `SELECT ` + jobColumns + ` FROM jobs WHERE created_by = $1 AND idempotency_key = $2`

// The original topics of the records of ids, ” for a record without one.
const sqlRecordTopics = `SELECT array_agg(DISTINCT coalesce(original_topic, '')) FROM dead_letters WHERE id = ANY($1)`

const sqlUnreservable = `SELECT d.id FROM dead_letters d LEFT JOIN jobs j ON j.id = d.job_id
	WHERE d.id = ANY($1) AND (NOT ` + reservable + ` OR j.status IN ('pending', 'running')
		OR EXISTS (SELECT 1 FROM replay_leases l WHERE l.record_id = d.id))
	ORDER BY d.id`

const sqlReserve = `UPDATE dead_letters SET job_id = $2 WHERE id = ANY($1)`
