package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

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
func (s *Store) SubmitJob(ctx context.Context, req JobRequest, actor Actor) (job Job, replayed bool, err error) {
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
func (s *Store) JobByIdempotencyKey(ctx context.Context, actor, key string) (Job, error) {
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

// DiscardRecord discards a parked or scheduled record that no active job holds, writing
// the operator's reason in the audit row. It returns ErrNotFound or ErrConflict (with the
// audit row of the refusal).
func (s *Store) DiscardRecord(ctx context.Context, id int64, reason string, actor Actor) (Record, error) {
	var rec Record
	var outcome error
	now := s.now()
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		if err := lockReservable(ctx, tx, []int64{id}, now); err != nil {
			if !errors.Is(err, ErrNotFound) && !errors.Is(err, ErrConflict) {
				return err
			}
			outcome = err
		} else {
			var err error
			if rec, err = scanRecord(tx.QueryRow(ctx, sqlDiscard, id, now, actor.Name)); err != nil {
				return err
			}
		}
		affected := int64(1)
		if outcome != nil {
			affected = 0
		}
		return writeAudit(ctx, tx, AuditEntry{At: now, Actor: actor.Name, RequestID: actor.RequestID, ClientRequestID: actor.ClientRequestID,
			Action: "discard", RecordIDs: []int64{id}, Affected: affected, Outcome: outcomeOf(outcome), Reason: reason})
	})
	if err != nil {
		return Record{}, err
	}
	if outcome != nil {
		return Record{}, fmt.Errorf("discard record %d: %w", id, &refusal{outcome})
	}
	return rec, nil
}

// MaxJobPage bounds a job's page (JobRecords), twice a listing's: each page a job leases,
// produces and finishes costs a share of work of its own (statements, transactions,
// the pipeline's hand-overs), which larger pages spread over more records.
const MaxJobPage = 2 * MaxPageSize

// JobRecords returns up to limit records of job with ids above afterID, lowest first: the
// records it selects (by ids, or by filter) plus the rows it already changed, which a
// crashed holder left behind (replaying, or finished before it saved its progress) and
// which no longer match the filter's statuses. They are read as their rows are, without
// their leases: a record a replay holds reads as parked or scheduled (BeginReplays
// decides who may take it). Each holds only what a job needs (scanJobRecord): its id,
// original topic and partition, timestamp, key, value, headers, route, status, job and
// reason (a record without payload is not replayed as it is: Record.NoPayload).
func (s *Store) JobRecords(ctx context.Context, job Job, afterID int64, limit int) ([]Record, error) {
	if limit <= 0 || limit > MaxJobPage {
		return nil, &ValidationError{Field: "limit", Reason: fmt.Sprintf("must be 1..%d", MaxJobPage)}
	}
	// One round trip, one implicit transaction: sqlPageSettings hold for the page's query.
	batch := &pgx.Batch{}
	batch.Queue(sqlPageSettings)
	if job.Filter != nil {
		cond, args := job.Filter.whereInPage([]any{afterID, limit, job.ID})
		batch.Queue(fmt.Sprintf(sqlJobRecordsByFilter, cond), args...)
	} else {
		batch.Queue(sqlJobRecordsByIDs, afterID, limit, job.RecordIDs)
	}
	results := s.pool.SendBatch(ctx, batch)
	defer results.Close()
	if _, err := results.Exec(); err != nil {
		return nil, interpretError(err)
	}
	rows, err := results.Query()
	if err != nil {
		return nil, interpretError(err)
	}
	recs, err := scanJobRecords(rows, limit)
	return recs, interpretError(err)
}

// scanJobRecords reads rows of jobRecordColumns into records. A page of a thousand 1 KiB
// records is most of what a job's own process spends per record, so the row's values are
// scanned into the same variables each time, and its headers as flat arrays, not through
// scanRecord's every column and reflection on [][]byte.
func scanJobRecords(rows pgx.Rows, limit int) ([]Record, error) {
	out := make([]Record, 0, limit)
	var (
		r             Record
		origTopic     *string
		origPartition *int32
		jobID         *int64
		keys, values  pgtype.FlatArray[[]byte]
	)
	_, err := pgx.ForEachRow(rows, []any{&r.ID, &origTopic, &origPartition, &r.Timestamp, &r.Key, &r.Value,
		&keys, &values, &r.Route, &r.Status, &jobID, &r.Reason}, func() error {
		rec := Record{ID: r.ID, JobID: deref(jobID)}
		rec.Route, rec.Reason = r.Route, r.Reason
		rec.Status, rec.Key, rec.Value, rec.Timestamp = r.Status, r.Key, r.Value, r.Timestamp.UTC()
		rec.Origin = Origin{Topic: deref(origTopic), Partition: -1, Offset: -1}
		if origPartition != nil {
			rec.Origin.Partition = *origPartition
		}
		if len(keys) != len(values) {
			return fmt.Errorf("store: record %d has %d header keys and %d values", r.ID, len(keys), len(values))
		}
		if len(keys) > 0 {
			rec.Headers = make([]Header, len(keys))
			for i := range keys {
				rec.Headers[i] = Header{Key: string(keys[i]), Value: values[i]}
			}
		}
		out = append(out, rec)
		return nil
	})
	return out, err
}

// BeginReplays leases the records of ids that can be replayed now for job: parked or
// scheduled (and not claimed by a redrive), held by an earlier holder of the job, or held
// under an expired lease by a job that ended. Each keeps the replay id it was first given
// by the job, "<job>-<record>", so a record produced again after a crash carries the same
// one. It returns the batch the leases form, or ErrConflict when the job is not running
// under owner any more (cancelled, or taken over): a cancel that committed is never
// followed by a lease of its job.
func (s *Store) BeginReplays(ctx context.Context, jobID int64, ids []int64, owner string, lease time.Duration, actor Actor) (ReplayBatch, error) {
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
			if _, err := tx.Exec(ctx, sqlBatchSettings); err != nil {
				return err
			}
			var err error
			prefix := strconv.FormatInt(jobID, 10) + "-"
			if fresh {
				batch, begun, err = beginFreshReplays(ctx, tx, ids, now, actor.Name, owner, now.Add(lease), jobID, prefix)
			} else {
				batch, begun, err = beginReplays(ctx, tx, ids, now, actor.Name, owner, now.Add(lease), jobID, prefix, nil)
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
			var held bool
			if err := tx.QueryRow(ctx, sqlJobHeld, jobID, owner).Scan(&held); err != nil {
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
func (s *Store) FinishReplays(ctx context.Context, jobID int64, owner string, batch ReplayBatch, done []Redriven, actor Actor) (int, error) {
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
		if _, err := tx.Exec(ctx, sqlBatchSettings); err != nil {
			return err
		}
		// Held, no other holder can have taken a lease of the job's (a lease of a running
		// job goes only to a holder of the job), and the share lock keeps it so until commit.
		var held bool
		if err := tx.QueryRow(ctx, sqlJobHeld, jobID, owner).Scan(&held); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, sqlFinishBatch, batch.ID, now, actor.Name, topics, partitions, offsets,
			len(done) == len(batch.ReplayIDs))
		switch {
		case err != nil:
			return err
		case tag.RowsAffected() == 0:
			changed = nil
		case held:
			changed = ids
		default:
			if changed, err = changedIDs(ctx, tx, sqlLeasesOfBatch, ids, batch.ID); err != nil {
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
func (s *Store) AbortReplays(ctx context.Context, jobID int64, owner string, ids []int64, reason Reason, actor Actor) (int, error) {
	return s.batchTransition(ctx, jobID, actor, "abort_replay", ids, nil, sqlAbortReplays, owner, string(reason))
}

// DiscardRecords discards the records of ids that are parked or scheduled (and not claimed
// by a redrive or held by a replay) for job, and returns how many it discarded.
func (s *Store) DiscardRecords(ctx context.Context, jobID int64, ids []int64, actor Actor) (int, error) {
	return s.batchTransition(ctx, jobID, actor, "discard", ids, func(ctx context.Context, tx pgx.Tx, ids []int64) error {
		_, err := lockRecords(ctx, tx, ids)
		return err
	}, sqlDiscardRecords, jobID)
}

// changedIDs runs query, which returns the ids it changed first in each row, and returns
// them in order.
func changedIDs(ctx context.Context, tx pgx.Tx, query string, args ...any) ([]int64, error) {
	rows, err := tx.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	var changed []int64
	var id int64
	_, err = pgx.ForEachRow(rows, []any{&id}, func() error {
		changed = append(changed, id)
		return nil
	})
	slices.Sort(changed)
	return changed, err
}

// batchTransition runs query ($1 ids, $2 now, $3 actor, then args), which returns the ids
// it changed, with one audit row for the batch. before, unless nil, runs first with ids:
// lockRecords takes their lease keys and rows, in statements of their own, so that query
// sees a replay lease committed while it waited.
func (s *Store) batchTransition(ctx context.Context, jobID int64, actor Actor, action string, ids []int64,
	before func(context.Context, pgx.Tx, []int64) error, query string, args ...any) (int, error) {
	var changed []int64
	now := s.now()
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, sqlBatchSettings); err != nil {
			return err
		}
		if before != nil {
			if err := before(ctx, tx, ids); err != nil {
				return err
			}
		}
		var err error
		if changed, err = changedIDs(ctx, tx, query, append([]any{ids, now, actor.Name}, args...)...); err != nil {
			return err
		}
		return writeAudit(ctx, tx, AuditEntry{At: now, Actor: actor.Name, RequestID: actor.RequestID, ClientRequestID: actor.ClientRequestID,
			Action: action, RecordIDs: changed, JobID: jobID, Affected: int64(len(changed)), Outcome: "ok"})
	})
	return len(changed), err
}

// ReturnExpiredReplays returns to the status they had (parked or scheduled) the records left replaying under an expired
// lease by a job that is no longer pending or running (cancelled or finished while its
// holder was away or dead), with one audit row by actor, and returns how many it
// returned. A running job's expired leases are left to whoever resumes the job.
func (s *Store) ReturnExpiredReplays(ctx context.Context, actor Actor) (int, error) {
	var returned []int64
	now := s.now()
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		var err error
		if returned, err = changedIDs(ctx, tx, sqlReturnExpiredReplays, now, actor.Name); err != nil || len(returned) == 0 {
			return err
		}
		return writeAudit(ctx, tx, AuditEntry{At: now, Actor: actor.Name, RequestID: actor.RequestID,
			Action: "return_replay", RecordIDs: returned, Affected: int64(len(returned)), Outcome: "ok"})
	})
	return len(returned), err
}

// FoldReplays moves the replay outcomes of up to limit batches of job (0: of every job)
// into their records' rows and deletes the batches, and returns how many batches it
// folded; only jobs that are no longer pending or running are folded, so that folding
// never competes with a job for the database. Readers see no change: a replayed record
// reads the same before and after (its finish_replay audit row was written when it was
// replayed). When fewer than limit were left, it also deletes the batches never finished
// that no lease names.
func (s *Store) FoldReplays(ctx context.Context, job int64, limit int) (int, error) {
	var n int
	if err := s.pool.QueryRow(ctx, sqlFoldReplays, limit, job).Scan(&n); err != nil {
		return 0, interpretError(err)
	}
	if n < limit {
		if _, err := s.pool.Exec(ctx, sqlDropSpentBatches); err != nil {
			return n, interpretError(err)
		}
	}
	return n, nil
}

// ReleaseJob ends owner's lease on a running job now, so that another worker resumes it
// at once (a graceful shutdown in the middle of a job).
func (s *Store) ReleaseJob(ctx context.Context, id int64, owner string) error {
	_, err := s.pool.Exec(ctx, sqlReleaseJob, id, owner, s.now())
	return interpretError(err)
}

// A job's per-batch bookkeeping commits without waiting for the WAL flush: a PostgreSQL
// crash can lose its last fraction of a second, which only makes those records go again
// under the same replay id, the at-least-once window a worker crash opens anyway. The
// operator's request (SubmitJob, DiscardRecord) stays synchronous.
//
// Its statements find their rows by key (= ANY of the batch's ids); no sequential scan:
// replay_leases grows by a row per record while a job runs, faster than its statistics
// follow, and a plan costed on stale ones (a holder the last ANALYZE never saw is
// estimated at one row) scanned the whole table for each of the batch's records.
const sqlBatchSettings = `SELECT set_config('synchronous_commit', 'off', true), set_config('enable_seqscan', 'off', true)`

// sqlPageSettings make a job's page read its records by id and stop at the page's end,
// merging in its leases in the same order (jobPage). The planner cannot estimate the
// page's test of a lease: it takes it to pass 0.5 % of the records, and when that made
// fewer than a page it chose to read every record after the cursor and sort them (and to
// compile that plan with JIT), for each page. A sequential scan of replay_leases for each
// record came from a plan a connection cached while the table was known empty.
const sqlPageSettings = `SELECT set_config('enable_seqscan', 'off', true), set_config('enable_sort', 'off', true),
	set_config('enable_nestloop', 'off', true), set_config('enable_hashjoin', 'off', true),
	set_config('jit', 'off', true)`

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

const sqlLockRecords = `SELECT id FROM dead_letters WHERE id = ANY($1) ORDER BY id FOR UPDATE`

// A record can be reserved when parked, or scheduled and not claimed by a redrive, and no
// pending or running job holds it. $1 ids, $2 now.
const reservable = `(d.status = 'parked' OR d.status = 'scheduled' AND (d.lease_until IS NULL OR d.lease_until <= $2))`

const sqlUnreservable = `SELECT d.id FROM dead_letters d LEFT JOIN jobs j ON j.id = d.job_id
	WHERE d.id = ANY($1) AND (NOT ` + reservable + ` OR j.status IN ('pending', 'running')
		OR EXISTS (SELECT 1 FROM replay_leases l WHERE l.record_id = d.id))
	ORDER BY d.id`

const sqlReserve = `UPDATE dead_letters SET job_id = $2 WHERE id = ANY($1)`

// activeJobOfRow and activeJobOfLease are true when the job of a dead_letters row (d) or
// of a lease (l) is pending or running.
const (
	activeJobOfRow   = `EXISTS (SELECT 1 FROM jobs j WHERE j.id = d.job_id AND j.status IN ('pending', 'running'))`
	activeJobOfLease = `EXISTS (SELECT 1 FROM jobs j WHERE j.id = l.job_id AND j.status IN ('pending', 'running'))`
)

// leaseReplayed is true when a lease (l) is replayed: every record of its batch was
// produced, or its batch holds an offset at its place (read only when some were not).
const leaseReplayed = `EXISTS (SELECT 1 FROM replay_batches rb WHERE rb.id = l.batch_id
	AND (rb.all_produced OR rb.offsets[l.batch_idx] IS NOT NULL))`

// $1 ids, $2 now, $3 owner, $4 lease until, $5 job (NULL: none), $6 replay id prefix, $7
// replay id (NULL: the prefix and the record id). A record is leased when no
// replay holds it and it is reservable and not reserved by another active job; when an
// earlier holder of the same job holds it (the caller holds the job, sqlJobHeld in the
// same transaction, so that holder lost it), keeping its replay id; or when a job that
// ended left it under an expired lease. A replay whose batch holds its outcome is
// never leased again. The record's row is not locked: the lease key is the lock (see
// BeginReplays), and sqlRecheckReplays confirms the new leases on a later snapshot. It
// returns the leased ids, their replay ids, whether each lease is new (xmax = 0: an
// insert, not the update of a lease taken over) and the batch, a row the statement
// inserts, each lease at its place in $1.
const sqlLeaseReplays = `WITH batch AS (INSERT INTO replay_batches (job_id, record_ids) VALUES ($5, $1) RETURNING id)
	INSERT INTO replay_leases AS l (record_id, job_id, owner, until, replay_id, batch_id, batch_idx)
	SELECT d.id, $5, $3, $4, coalesce($7, CASE WHEN h.job_id = $5 THEN h.replay_id ELSE $6 || d.id::text END),
		(SELECT id FROM batch), array_position($1::bigint[], d.id)
	FROM dead_letters d LEFT JOIN LATERAL (
		SELECT * FROM replay_states h WHERE h.record_id = d.id OFFSET 0) h ON true
	WHERE d.id = ANY($1) AND (
		h.record_id IS NULL AND ` + reservable + `
			AND (d.job_id IS NULL OR d.job_id = $5 OR NOT ` + activeJobOfRow + `)
		OR h.replayed_at IS NULL AND h.job_id = $5
		OR h.replayed_at IS NULL AND h.until <= $2
			AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.id = h.job_id AND j.status IN ('pending', 'running')))
	ORDER BY d.id
	ON CONFLICT (record_id) DO UPDATE SET job_id = excluded.job_id, owner = excluded.owner, until = excluded.until,
		replay_id = excluded.replay_id, batch_id = excluded.batch_id, batch_idx = excluded.batch_idx
		WHERE NOT ` + leaseReplayed + ` AND (l.job_id = $5 OR l.until <= $2 AND NOT ` + activeJobOfLease + `)
	RETURNING record_id, replay_id, xmax = 0, batch_id`

// $1 job (NULL: none), $2 the records asked for: a new batch (beginFreshReplays).
const sqlNewBatch = `INSERT INTO replay_batches (job_id, record_ids) VALUES ($1, $2) RETURNING id`

// $1 new leases, $2 now, $3 actor, $4 owner, $5 lease until, $6 job (NULL: none), $7
// leases taken over, and where to read the rows of $1: from $8 to $9 (a page whose ids
// are close together), else $10 ($1 itself). A statement of its own, on a snapshot taken
// after the lease's insert ended: it sees every writer that committed before (one that
// held a lease key the insert waited for, above all). It reads each record's row once
// (seen). A new lease stays when its record is parked and not reserved by another active
// job, or scheduled and not claimed by a redrive (nor reserved): its row then carries the
// lease in lease_until, so that no redrive claims it (the UPDATE waits for a claim in
// progress and re-reads the row it committed). A scheduled record taken over carries its
// new holder. It deletes the other new leases, found by their keys, and returns their
// ids (joined to the leases, the planner could read every lease of the holder for each
// page: it takes replay_leases for smaller than a running job makes it). Read as a range,
// a page's rows cost one descent of the index, where finding each id costs one per
// record; the rows in the range that are not the page's are read and left alone.
const sqlRecheckReplays = `WITH seen AS (
		SELECT d.id, d.status = 'parked' AND (d.job_id IS NULL OR d.job_id = $6 OR NOT ` + activeJobOfRow + `) AS parked
		FROM dead_letters d WHERE d.id BETWEEN $8 AND $9 OR d.id = ANY($10) OR d.id = ANY($7)),
	kept AS (
		UPDATE dead_letters d SET lease_owner = $4, lease_until = $5, changed_at = $2, changed_by = $3
		WHERE d.id IN (SELECT id FROM seen WHERE NOT parked AND (id = ANY($1) OR id = ANY($7)))
			AND d.status = 'scheduled' AND (d.id = ANY($7)
			OR (d.lease_until IS NULL OR d.lease_until <= $2)
			AND (d.job_id IS NULL OR d.job_id = $6 OR NOT ` + activeJobOfRow + `))
		RETURNING d.id),
	lost AS (
		SELECT u.id FROM unnest($1::bigint[]) u(id)
		WHERE u.id NOT IN (SELECT id FROM kept) AND u.id NOT IN (SELECT id FROM seen WHERE parked))
	DELETE FROM replay_leases l WHERE l.record_id = ANY (ARRAY(SELECT id FROM lost)) AND l.owner = $4
	RETURNING l.record_id`

// sqlGuard takes the lease keys of $1 for a writer that must not change a record a replay
// holds; it returns the keys it took (no lease holds those). sqlUnguard deletes them in
// the same transaction: the key stays taken until commit all the same (see lockRecords).
const (
	sqlGuard = `INSERT INTO replay_leases (record_id, owner, until)
	SELECT id, '', '-infinity' FROM unnest($1::bigint[]) id ORDER BY id
	ON CONFLICT (record_id) DO NOTHING RETURNING record_id`
	sqlUnguard = `DELETE FROM replay_leases WHERE record_id = ANY($1)`
)

// $1 batch, $2 now, $3 actor, then the topic, partition and offset of each record at its
// place in the batch (NULL: not produced), and whether every record leased was produced.
// A batch is finished once.
const sqlFinishBatch = `UPDATE replay_batches SET replayed_at = $2, replayed_by = $3,
		topics = $4, partitions = $5, offsets = $6, all_produced = $7
	WHERE id = $1 AND replayed_at IS NULL`

// $1 ids, $2 batch: the records of ids whose lease is in the batch.
const sqlLeasesOfBatch = `SELECT record_id FROM replay_leases WHERE record_id = ANY($1) AND batch_id = $2`

// $1 ids, $2 now, $3 actor, $4 owner, then parallel arrays of topic, partition and offset
// in the order of $1: each record whose lease owner holds is replayed there, at its place
// in its lease's batch (FinishReplay: one record; a job finishes a whole batch at once,
// FinishReplays).
const sqlFinishReplays = `UPDATE replay_batches b SET replayed_at = $2, replayed_by = $3,
		topics[l.batch_idx] = u.topic, partitions[l.batch_idx] = u.part, offsets[l.batch_idx] = u.off
	FROM replay_leases l JOIN unnest($1::bigint[], $5::text[], $6::integer[], $7::bigint[]) AS u(id, topic, part, off)
		ON u.id = l.record_id
	WHERE l.record_id = ANY($1) AND l.owner = $4 AND b.id = l.batch_id AND NOT ` + leaseReplayed + `
	RETURNING l.record_id`

// $1 limit, $2 job (0: any): up to $1 finished batches of jobs that ended move into their
// records' rows (status replayed, with the lease's job and replay id, the produced
// position and change) and are deleted, with the leases that held their outcomes; what
// readers see does not change. Each batch's arrays are read once (an array read per
// record unpacked each batch's arrays once per record). A lease taken over into a later
// batch is that batch's; one without an outcome (not produced) reads as replaying once
// its batch is gone, as before, until it is returned. SKIP LOCKED lets several runners
// fold at once; each lease is found by its key. It returns how many batches it folded.
const sqlFoldReplays = `WITH spent AS (
		SELECT b.id FROM replay_batches b
		WHERE b.replayed_at IS NOT NULL AND ($2::bigint = 0 OR b.job_id = $2)
			AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.id = b.job_id AND j.status IN ('pending', 'running'))
		ORDER BY b.id LIMIT $1
		FOR UPDATE SKIP LOCKED),
	dropped AS (
		DELETE FROM replay_batches b WHERE b.id IN (SELECT id FROM spent)
		RETURNING b.*),
	outcome AS (
		SELECT b.id AS batch_id, b.replayed_at, b.replayed_by, o.*
		FROM dropped b, unnest(b.record_ids, b.topics, b.partitions, b.offsets) WITH ORDINALITY
			AS o(record_id, topic, part, off, idx)
		WHERE o.off IS NOT NULL),
	gone AS (
		DELETE FROM replay_leases l USING outcome o
		WHERE l.record_id = o.record_id AND l.batch_id = o.batch_id AND l.batch_idx = o.idx
		RETURNING l.record_id, l.job_id, l.replay_id, o.topic, o.part, o.off, o.replayed_at, o.replayed_by),
	moved AS (
		UPDATE dead_letters d SET status = 'replayed', lease_owner = NULL, lease_until = NULL,
			job_id = g.job_id, replay_id = g.replay_id,
			target_topic = g.topic, produced_partition = g.part, produced_offset = g.off,
			changed_at = g.replayed_at, changed_by = g.replayed_by
		FROM gone g WHERE d.id = g.record_id)
	SELECT count(*) FROM dropped`

// sqlDropSpentBatches deletes the batches never finished that no lease names any more
// (their holder died, or none of their records could be leased): a lease names a batch
// only from its transaction's commit on and is never moved to an older batch.
const sqlDropSpentBatches = `DELETE FROM replay_batches b
	WHERE b.replayed_at IS NULL AND NOT EXISTS (SELECT 1 FROM replay_leases l WHERE l.batch_id = b.id)`

// $1 now, $2 actor: the expired leases of jobs that ended.
const sqlReturnExpiredReplays = `WITH gone AS (
		DELETE FROM replay_leases l WHERE NOT ` + leaseReplayed + ` AND l.until <= $1 AND NOT ` + activeJobOfLease + `
		RETURNING l.record_id, l.owner),
	back AS (
		UPDATE dead_letters d SET lease_owner = NULL, lease_until = NULL, changed_at = $1, changed_by = $2
		FROM gone g WHERE d.id = g.record_id AND d.lease_owner = g.owner)
	SELECT record_id FROM gone`

// $1 job, $2 owner.
const sqlJobHeld = `SELECT EXISTS (SELECT 1 FROM jobs WHERE id = $1 AND status = 'running' AND lease_owner = $2 FOR SHARE)`

// $1 ids, $2 now, $3 actor, $4 owner, $5 reason: the leases of ids that owner holds end;
// with a reason (why they cannot go) the records are parked with it, else they stay where
// they were (parked, or scheduled with their due time and reason).
const sqlAbortReplays = `WITH gone AS (
		DELETE FROM replay_leases l WHERE l.record_id = ANY($1) AND l.owner = $4 AND NOT ` + leaseReplayed + `
		RETURNING l.record_id),
	back AS (
		UPDATE dead_letters d SET
			status = CASE WHEN $5 = '' THEN d.status ELSE 'parked' END,
			reason = CASE WHEN $5 = '' THEN d.reason ELSE $5 END,
			lease_owner = NULL, lease_until = NULL, changed_at = $2, changed_by = $3
		FROM gone g WHERE d.id = g.record_id)
	SELECT record_id FROM gone`

// $1 ids, $2 now, $3 actor, $4 job. The lease keys and rows are taken first
// (lockRecords), so that a lease committed meanwhile is seen.
const sqlDiscardRecords = `UPDATE dead_letters d SET status = 'discarded', job_id = $4, changed_at = $2, changed_by = $3
	WHERE d.id = ANY($1) AND ` + reservable + `
		AND (d.job_id IS NULL OR d.job_id = $4 OR NOT ` + activeJobOfRow + `)
		AND NOT EXISTS (SELECT 1 FROM replay_leases l WHERE l.record_id = d.id)
	RETURNING d.id`

// $1 after id, $2 limit, $3 job, then the filter's parameters: the rows the filter
// selects, those the job finished, and those it leased (a crashed holder's).
const sqlJobRecordsByFilter = `SELECT ` + jobRecordColumns + ` FROM ` + jobPage + `
	WHERE id > $1 AND (%s OR job_id = $3 AND status IN ('replayed', 'discarded') OR lp.lease_job = $3)
	ORDER BY id LIMIT $2`

// $1 after id, $2 limit, $3 ids.
const sqlJobRecordsByIDs = `SELECT ` + jobRecordColumns + ` FROM ` + jobPage + `
	WHERE id > $1 AND id = ANY($3) ORDER BY id LIMIT $2`

const sqlReleaseJob = `UPDATE jobs SET lease_until = $3, updated_at = $3
	WHERE id = $1 AND status = 'running' AND lease_owner = $2`
