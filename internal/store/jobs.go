package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/dlqops/dlq/internal/store/dbsqlc"
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
	// RedriveTo sends a replay where a redrive would by the group that failed each
	// record (a route's redrive_to value); empty is the original or target topic.
	RedriveTo  string
	ResetRetry bool
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
		filter, err := marshalNullable(spec.Filter)
		if err != nil {
			return err
		}
		row, err := queries.CreateJob(ctx, tx, dbsqlc.CreateJobParams{Kind: string(spec.Kind), Filter: filter, RecordIds: spec.RecordIDs,
			TargetTopic: spec.TargetTopic, RedriveTo: spec.RedriveTo, ResetRetry: spec.ResetRetry, RatePerSecond: int32(spec.RatePerSecond),
			ConfirmedCount: spec.ConfirmedCount, CreatedBy: actor.Name, RequestID: actor.RequestID, Now: now})
		if err != nil {
			return err
		}
		if job, err = jobFromRow(dbsqlc.GetJobRow(row)); err != nil {
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
	row, err := queries.GetJob(ctx, s.pool, id)
	if err != nil {
		return Job{}, interpretError(err)
	}
	return jobFromRow(row)
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
	rows, err := queries.ListJobs(ctx, s.pool, dbsqlc.ListJobsParams{BeforeID: beforeID, Topics: scope(topics), MaxJobs: int32(limit)})
	if err != nil {
		return nil, interpretError(err)
	}
	jobs := make([]Job, len(rows))
	for i, row := range rows {
		if jobs[i], err = jobFromRow(dbsqlc.GetJobRow(row)); err != nil {
			return nil, err
		}
	}
	return jobs, nil
}

// CancelJob cancels a pending or running job. A running job's worker learns it when its
// next UpdateJobProgress returns ErrConflict.
func (s *Jobs) CancelJob(ctx context.Context, id int64, actor Actor) (Job, error) {
	return s.jobTransition(ctx, id, actor, "cancel_job", func(tx pgx.Tx, now time.Time) (dbsqlc.GetJobRow, error) {
		row, err := queries.CancelJob(ctx, tx, dbsqlc.CancelJobParams{Now: now, ID: id})
		return dbsqlc.GetJobRow(row), err
	})
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
		row, err := queries.SettleCancelledJob(ctx, tx, dbsqlc.SettleCancelledJobParams{Done: p.Done, Failed: p.Failed,
			Skipped: p.Skipped, CursorID: p.Cursor, InFlight: inFlight, Now: now, ID: id})
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("settle cancelled job %d: %w", id, ErrConflict)
		}
		if err != nil {
			return err
		}
		if job, err = jobFromRow(dbsqlc.GetJobRow(row)); err != nil {
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
	now := s.now()
	row, err := queries.ClaimJob(ctx, s.pool, dbsqlc.ClaimJobParams{Owner: owner, LeaseUntil: now.Add(lease), Now: now})
	if err != nil {
		return Job{}, interpretError(err)
	}
	return jobFromRow(dbsqlc.GetJobRow(row))
}

// ClaimRecordJob is ClaimJob for jobs that name their records (single-record actions
// above all), so that they need not wait behind bulk jobs selected by filter.
func (s *Jobs) ClaimRecordJob(ctx context.Context, owner string, lease time.Duration) (Job, error) {
	now := s.now()
	row, err := queries.ClaimRecordJob(ctx, s.pool, dbsqlc.ClaimRecordJobParams{Owner: owner, LeaseUntil: now.Add(lease), Now: now})
	if err != nil {
		return Job{}, interpretError(err)
	}
	return jobFromRow(dbsqlc.GetJobRow(row))
}

// UpdateJobProgress stores progress and extends the lease. ErrConflict means the job is no
// longer running under owner (cancelled, or the lease expired and another worker took it):
// the worker must stop.
func (s *Jobs) UpdateJobProgress(ctx context.Context, id int64, owner string, p JobProgress, lease time.Duration) error {
	now := s.now()
	n, err := queries.UpdateJobProgress(ctx, s.pool, dbsqlc.UpdateJobProgressParams{Total: p.Total, Done: p.Done, Failed: p.Failed,
		CursorID: p.Cursor, LeaseUntil: now.Add(lease), Now: now, Skipped: p.Skipped, ID: id, Owner: owner})
	if err != nil {
		return interpretError(err)
	}
	if n == 0 {
		return fmt.Errorf("job %d: %w", id, ErrConflict)
	}
	return nil
}

// FinishJob ends a job owner runs with status JobSucceeded or JobFailed.
func (s *Jobs) FinishJob(ctx context.Context, id int64, owner string, status JobStatus, errMsg string) (Job, error) {
	if status != JobSucceeded && status != JobFailed {
		return Job{}, &ValidationError{Field: "status", Reason: "a job finishes as succeeded or failed"}
	}
	return s.jobTransition(ctx, id, Actor{Name: owner}, "finish_job", func(tx pgx.Tx, now time.Time) (dbsqlc.GetJobRow, error) {
		row, err := queries.FinishJob(ctx, tx, dbsqlc.FinishJobParams{Status: string(status), Error: cleanText(errMsg), Now: now,
			ID: id, Owner: owner})
		return dbsqlc.GetJobRow(row), err
	})
}

// jobTransition runs change, a conditional UPDATE of job id that returns it, or
// pgx.ErrNoRows when the job's state does not allow it, with its audit row.
func (s *Jobs) jobTransition(ctx context.Context, id int64, actor Actor, action string,
	change func(tx pgx.Tx, now time.Time) (dbsqlc.GetJobRow, error)) (Job, error) {
	var job Job
	var outcome error
	now := s.now()
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		row, err := change(tx, now)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			outcome = ErrConflict
			exists, err := queries.JobExists(ctx, tx, id)
			if err != nil {
				return err
			}
			if !exists {
				outcome = ErrNotFound
			}
		case err != nil:
			return err
		default:
			if job, err = jobFromRow(row); err != nil {
				return err
			}
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

// ReleaseJob ends owner's lease on a running job now, so that another worker resumes it
// at once (a graceful shutdown in the middle of a job).
func (s *Jobs) ReleaseJob(ctx context.Context, id int64, owner string) error {
	return interpretError(queries.ReleaseJob(ctx, s.pool, dbsqlc.ReleaseJobParams{Now: s.now(), ID: id, Owner: owner}))
}
