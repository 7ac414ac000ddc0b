package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// JobKind is what a bulk job does to each selected record.
type JobKind string

const (
	JobReplay  JobKind = "replay"
	JobDiscard JobKind = "discard"
)

// JobStatus is where a job is in its life.
type JobStatus string

const (
	JobPending   JobStatus = "pending"
	JobRunning   JobStatus = "running"
	JobSucceeded JobStatus = "succeeded"
	JobFailed    JobStatus = "failed"
	JobCancelled JobStatus = "cancelled"
)

// JobSpec is what an operator asks for. Exactly one of Filter and RecordIDs selects the
// records.
type JobSpec struct {
	Kind      JobKind
	Filter    *Filter
	RecordIDs []int64
	// TargetTopic overrides the original topic of a replay; empty keeps it.
	TargetTopic string
	ResetRetry  bool
	// RatePerSecond limits a replay; 0 is unlimited.
	RatePerSecond int
	// ConfirmedCount is the dry-run count the operator confirmed.
	ConfirmedCount int64
	// Edit replaces what a single replay sends; nil sends the record as stored.
	Edit *Edit
}

// Edit is an operator's correction of one record before its replay. The record's row keeps
// what was dead-lettered; only the produced record differs.
type Edit struct {
	// Value replaces the value when ValueSet (nil: a null value).
	ValueSet bool   `json:"value_set,omitempty"`
	Value    []byte `json:"value,omitempty"`
	// Headers replace the foreign headers when HeadersSet; our own headers are written
	// from the record's envelope as for any replay.
	HeadersSet bool         `json:"headers_set,omitempty"`
	Headers    []EditHeader `json:"headers,omitempty"`
}

// EditHeader is one header of an Edit (nil Value: a null header value).
type EditHeader struct {
	Key   string `json:"key"`
	Value []byte `json:"value"`
}

// JobProgress is what a running job reports. Cursor is the last record id it processed:
// after a crash the next holder resumes above it.
type JobProgress struct {
	Total, Done, Failed int64
	// Skipped counts selected records the job left alone: taken by another job, or no
	// longer parked or scheduled (or no longer matching its filter) when it came to them.
	// A finished job has Total = Done + Failed + Skipped.
	Skipped int64
	Cursor  int64
}

// Job is a durable operator job.
type Job struct {
	ID int64
	JobSpec
	Status JobStatus
	JobProgress
	LeaseOwner string
	LeaseUntil time.Time
	Error      string
	// Topics are the original topics the job may touch; nil when any.
	Topics []string
	// InFlightAtCancel is how many records a replay job had handed to the producer and
	// not yet settled when its holder learned of its cancel, once they settled (nil until
	// then, and for a job not cancelled while it ran). Each that reached the target is
	// counted in Done.
	InFlightAtCancel *int64
	CreatedBy        string
	RequestID        string
	CreatedAt        time.Time
	StartedAt        time.Time
	UpdatedAt        time.Time
	FinishedAt       time.Time
}

// CreateJob stores a pending job and its audit row.
func (s *Jobs) CreateJob(ctx context.Context, spec JobSpec, actor Actor) (Job, error) {
	switch {
	case spec.Kind != JobReplay && spec.Kind != JobDiscard:
		return Job{}, &ValidationError{Field: "kind", Reason: fmt.Sprintf("unknown job kind %q", spec.Kind)}
	case (spec.Filter == nil) == (spec.RecordIDs == nil):
		return Job{}, &ValidationError{Field: "selector", Reason: "give exactly one of a filter and record ids"}
	case spec.RatePerSecond < 0:
		return Job{}, &ValidationError{Field: "rate_per_second", Reason: "negative"}
	}
	var job Job
	now := s.now()
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		var err error
		job, err = scanJob(tx.QueryRow(ctx, sqlCreateJob, string(spec.Kind), spec.Filter, spec.RecordIDs,
			spec.TargetTopic, spec.ResetRetry, spec.RatePerSecond, spec.ConfirmedCount,
			actor.Name, actor.RequestID, now))
		if err != nil {
			return err
		}
		return writeAudit(ctx, tx, AuditEntry{At: now, Actor: actor.Name, RequestID: actor.RequestID, ClientRequestID: actor.ClientRequestID,
			Action: "create_" + string(spec.Kind) + "_job", RecordIDs: spec.RecordIDs, Filter: spec.Filter,
			JobID: job.ID, Affected: spec.ConfirmedCount, Outcome: "ok"})
	})
	return job, err
}

// GetJob returns one job.
func (s *Jobs) GetJob(ctx context.Context, id int64) (Job, error) {
	job, err := scanJob(s.pool.QueryRow(ctx, sqlGetJob, id))
	return job, interpretError(err)
}

// ListJobs returns up to limit jobs with ids below beforeID (0 for the newest), newest first.
// With topics (a scoped token's), only the jobs that touch records of those topics alone.
func (s *Jobs) ListJobs(ctx context.Context, beforeID int64, limit int, topics ...string) ([]Job, error) {
	if err := checkLimit(limit); err != nil {
		return nil, err
	}
	if beforeID <= 0 {
		beforeID = 1<<63 - 1
	}
	rows, err := s.pool.Query(ctx, sqlListJobs, beforeID, limit, scope(topics))
	if err != nil {
		return nil, interpretError(err)
	}
	return collect(rows, scanJob)
}

// CancelJob cancels a pending or running job. A running job's worker learns it when its
// next UpdateJobProgress returns ErrConflict.
func (s *Jobs) CancelJob(ctx context.Context, id int64, actor Actor) (Job, error) {
	return s.jobTransition(ctx, id, actor, "cancel_job", sqlCancelJob)
}

// SettleCancelledJob stores the final counts of job id, cancelled while actor ran it, once
// everything actor had handed to the producer settled: p counts every record that reached
// the target in Done, inFlight is how many were handed over and unsettled when actor
// learned of the cancel. It writes an audit row that says so, and ErrConflict when the
// job is not cancelled or was settled already.
func (s *Jobs) SettleCancelledJob(ctx context.Context, id int64, p JobProgress, inFlight int64, actor Actor) (Job, error) {
	var job Job
	now := s.now()
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		var err error
		job, err = scanJob(tx.QueryRow(ctx, sqlSettleCancelledJob, id, now, p.Done, p.Failed, p.Skipped, p.Cursor, inFlight))
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("settle cancelled job %d: %w", id, ErrConflict)
		}
		if err != nil {
			return err
		}
		return writeAudit(ctx, tx, AuditEntry{At: now, Actor: actor.Name, Action: "settle_cancelled_job", JobID: id,
			Affected: p.Done, Outcome: "ok", Reason: fmt.Sprintf("cancelled with %d records in flight; in all %d of %d records "+
				"reached the target, %d failed, %d skipped, %d left where they were",
				inFlight, p.Done, job.Total, p.Failed, p.Skipped, max(0, job.Total-p.Done-p.Failed-p.Skipped))})
	})
	return job, err
}

// ClaimJob leases the oldest pending job, or a running one whose lease expired (its worker
// died), to owner. It returns ErrNotFound when there is none. Instances claim with
// FOR UPDATE SKIP LOCKED and never get the same job.
func (s *Jobs) ClaimJob(ctx context.Context, owner string, lease time.Duration) (Job, error) {
	return s.claimJob(ctx, sqlClaimJob, owner, lease)
}

// ClaimRecordJob is ClaimJob for jobs that name their records (single-record actions
// above all), so that they need not wait behind bulk jobs selected by filter.
func (s *Jobs) ClaimRecordJob(ctx context.Context, owner string, lease time.Duration) (Job, error) {
	return s.claimJob(ctx, sqlClaimRecordJob, owner, lease)
}

func (s *Jobs) claimJob(ctx context.Context, query, owner string, lease time.Duration) (Job, error) {
	now := s.now()
	job, err := scanJob(s.pool.QueryRow(ctx, query, owner, now.Add(lease), now))
	return job, interpretError(err)
}

// UpdateJobProgress stores progress and extends the lease. ErrConflict means the job is no
// longer running under owner (cancelled, or the lease expired and another worker took it):
// the worker must stop.
func (s *Jobs) UpdateJobProgress(ctx context.Context, id int64, owner string, p JobProgress, lease time.Duration) error {
	now := s.now()
	tag, err := s.pool.Exec(ctx, sqlUpdateJobProgress, id, owner, p.Total, p.Done, p.Failed, p.Cursor, now.Add(lease), now, p.Skipped)
	if err != nil {
		return interpretError(err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("job %d: %w", id, ErrConflict)
	}
	return nil
}

// FinishJob ends a job owner runs with status JobSucceeded or JobFailed.
func (s *Jobs) FinishJob(ctx context.Context, id int64, owner string, status JobStatus, errMsg string) (Job, error) {
	if status != JobSucceeded && status != JobFailed {
		return Job{}, &ValidationError{Field: "status", Reason: "a job finishes as succeeded or failed"}
	}
	return s.jobTransition(ctx, id, Actor{Name: owner}, "finish_job", sqlFinishJob, owner, string(status), cleanText(errMsg))
}

// jobTransition runs query with $1 id, $2 now and then args, with its audit row.
func (s *Jobs) jobTransition(ctx context.Context, id int64, actor Actor, action string, query string, args ...any) (Job, error) {
	var job Job
	var outcome error
	now := s.now()
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		var err error
		job, err = scanJob(tx.QueryRow(ctx, query, append([]any{id, now}, args...)...))
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			outcome = ErrConflict
			var exists bool
			if err := tx.QueryRow(ctx, sqlJobExists, id).Scan(&exists); err != nil {
				return err
			}
			if !exists {
				outcome = ErrNotFound
			}
		case err != nil:
			return err
		}
		result := outcomeOf(outcome)
		if outcome == nil && job.Status != JobCancelled {
			result = string(job.Status)
		}
		return writeAudit(ctx, tx, AuditEntry{At: now, Actor: actor.Name, RequestID: actor.RequestID, ClientRequestID: actor.ClientRequestID,
			Action: action, JobID: id, Affected: job.Done, Outcome: result})
	})
	if err != nil {
		return Job{}, err
	}
	if outcome != nil {
		return Job{}, fmt.Errorf("%s %d: %w", action, id, &refusal{outcome})
	}
	return job, nil
}

// scanJob reads jobColumns.
func scanJob(row scanner) (Job, error) {
	var (
		j                             Job
		owner                         *string
		leaseUntil, started, finished *time.Time
	)
	err := row.Scan(&j.ID, &j.Kind, &j.Filter, &j.RecordIDs, &j.TargetTopic, &j.ResetRetry, &j.RatePerSecond,
		&j.ConfirmedCount, &j.Status, &j.Total, &j.Done, &j.Failed, &j.Cursor, &owner, &leaseUntil,
		&j.Error, &j.CreatedBy, &j.RequestID, &j.CreatedAt, &started, &j.UpdatedAt, &finished, &j.Topics, &j.Edit, &j.Skipped,
		&j.InFlightAtCancel)
	j.LeaseOwner, j.LeaseUntil, j.StartedAt, j.FinishedAt = deref(owner), deref(leaseUntil), deref(started), deref(finished)
	utc(&j.LeaseUntil, &j.CreatedAt, &j.StartedAt, &j.UpdatedAt, &j.FinishedAt)
	return j, err
}

// ReleaseJob ends owner's lease on a running job now, so that another worker resumes it
// at once (a graceful shutdown in the middle of a job).
func (s *Jobs) ReleaseJob(ctx context.Context, id int64, owner string) error {
	_, err := s.pool.Exec(ctx, sqlReleaseJob, id, owner, s.now())
	return interpretError(err)
}

const sqlReleaseJob = `UPDATE jobs SET lease_until = $3, updated_at = $3
	WHERE id = $1 AND status = 'running' AND lease_owner = $2`
