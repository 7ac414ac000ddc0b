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

// JobRecords returns up to limit records of job with ids above afterID, lowest first: the
// records it selects (by ids, or by filter) plus the rows it already changed, which a
// crashed holder left behind (replaying, or finished before it saved its progress) and
// which no longer match the filter's statuses. They are read as their rows are, without
// their leases: a record a replay holds reads as parked or scheduled (BeginReplays
// decides who may take it). Each holds only what a job needs (scanJobRecord): its id,
// original topic and partition, timestamp, key, value, headers, route, status and job.
func (s *Store) JobRecords(ctx context.Context, job Job, afterID int64, limit int) ([]Record, error) {
	if err := checkLimit(limit); err != nil {
		return nil, err
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
		&keys, &values, &r.Route, &r.Status, &jobID}, func() error {
		rec := Record{ID: r.ID, JobID: deref(jobID)}
		rec.Route = r.Route
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
// one. It returns the replay id of each leased record, or ErrConflict when the job is not
// running under owner any more (cancelled, or taken over): a cancel that committed is
// never followed by a lease of its job.
func (s *Store) BeginReplays(ctx context.Context, jobID int64, ids []int64, owner string, lease time.Duration, actor Actor) (map[int64]string, error) {
	if owner == "" || lease <= 0 {
		return nil, &ValidationError{Field: "lease", Reason: "owner and a positive duration are required"}
	}
	var begun map[int64]string
	now := s.now()
	leasePage := func(fresh bool) error {
		return s.inTx(ctx, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, sqlBatchSettings); err != nil {
				return err
			}
			var err error
			if begun, err = beginReplays(ctx, tx, ids, now, actor.Name, owner, now.Add(lease), jobID,
				strconv.FormatInt(jobID, 10)+"-", nil, fresh); err != nil {
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
	// A page whose records no lease holds, which is nearly every page, is leased by a plain
	// insert; one that meets a lease key (a lease of another job or of an earlier holder,
	// an outcome not folded yet, a writer's key) is leased again by the statement that
	// takes each case in turn.
	err := leasePage(true)
	if errors.Is(err, errLeaseKeyTaken) {
		err = leasePage(false)
	}
	if err != nil {
		return nil, err
	}
	return begun, nil
}

// FinishReplays marks records owner replays as replayed where they were produced, and
// returns how many it marked: rows whose lease another holder took are left alone.
func (s *Store) FinishReplays(ctx context.Context, jobID int64, owner string, done []Redriven, actor Actor) (int, error) {
	ids := make([]int64, len(done))
	topics := make([]string, len(done))
	partitions := make([]int32, len(done))
	offsets := make([]int64, len(done))
	for i, d := range done {
		ids[i], topics[i], partitions[i], offsets[i] = d.ID, d.Produced.Topic, d.Produced.Partition, d.Produced.Offset
	}
	return s.batchTransition(ctx, jobID, actor, "finish_replay", ids, hashJoin, sqlFinishReplays, owner, topics, partitions, offsets)
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
// sees a replay lease committed while it waited; hashJoin settles query's plan.
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

// FoldReplays moves up to limit replay outcomes of job (0: of every job) from their lease
// rows into their records' rows, and returns how many it moved; only jobs that are no
// longer pending or running are folded, so that folding never competes with a job for the
// database. Readers see no change: a replayed record reads the same before and after (its
// finish_replay audit row was written when it was replayed).
func (s *Store) FoldReplays(ctx context.Context, job int64, limit int) (int, error) {
	tag, err := s.pool.Exec(ctx, sqlFoldReplays, limit, job)
	if err != nil {
		return 0, interpretError(err)
	}
	return int(tag.RowsAffected()), nil
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
// sqlHashJoin keeps sqlFinishReplays from joining the batch's outcomes to its leases by a
// nested loop: when stale statistics estimate the leases at one row, that loop unnests
// the outcome arrays once per lease (seconds per batch).
const sqlHashJoin = `SELECT set_config('enable_nestloop', 'off', true)`

func hashJoin(ctx context.Context, tx pgx.Tx, _ []int64) error {
	_, err := tx.Exec(ctx, sqlHashJoin)
	return err
}

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

// $1 ids, $2 now, $3 owner, $4 lease until, $5 job (NULL: none), $6 replay id prefix, $7
// replay id (NULL: the prefix and the record id). A record is leased when no
// replay holds it and it is reservable and not reserved by another active job; when an
// earlier holder of the same job holds it (the caller holds the job, sqlJobHeld in the
// same transaction, so that holder lost it), keeping its replay id; or when a job that
// ended left it under an expired lease. A replay that holds its outcome (replayed_at) is
// never leased again. The record's row is not locked: the lease key is the lock (see
// BeginReplays), and sqlRecheckReplays confirms the new leases on a later snapshot. It
// returns the leased ids, their replay ids, and whether each lease is new (xmax = 0: an
// insert, not the update of a lease taken over).
const sqlLeaseReplays = `INSERT INTO replay_leases AS l (record_id, job_id, owner, until, replay_id)
	SELECT d.id, $5, $3, $4, coalesce($7, CASE WHEN h.job_id = $5 THEN h.replay_id ELSE $6 || d.id::text END)
	FROM dead_letters d LEFT JOIN LATERAL (
		SELECT * FROM replay_leases h WHERE h.record_id = d.id OFFSET 0) h ON true
	WHERE d.id = ANY($1) AND (
		h.record_id IS NULL AND ` + reservable + `
			AND (d.job_id IS NULL OR d.job_id = $5 OR NOT ` + activeJobOfRow + `)
		OR h.replayed_at IS NULL AND h.job_id = $5
		OR h.replayed_at IS NULL AND h.until <= $2
			AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.id = h.job_id AND j.status IN ('pending', 'running')))
	ORDER BY d.id
	ON CONFLICT (record_id) DO UPDATE SET job_id = excluded.job_id, owner = excluded.owner, until = excluded.until,
		replay_id = excluded.replay_id
		WHERE l.replayed_at IS NULL AND (l.job_id = $5 OR l.until <= $2 AND NOT ` + activeJobOfLease + `)
	RETURNING record_id, replay_id, xmax = 0`

// sqlLeaseFresh is sqlLeaseReplays for records no lease holds: $1 ids, $2 owner, $3
// lease until, $4 job (NULL: none), $5 replay id prefix, $6 replay id (NULL: the prefix
// and the record id). It inserts the lease of each record of $1, reading nothing: the
// recheck drops those whose record may not be leased. It fails (unique_violation on
// replay_leases_pkey) on a record a lease key holds, once the transaction that inserted
// the key committed. It returns the leased ids, their replay ids and true (each lease is
// new), as sqlLeaseReplays does.
const sqlLeaseFresh = `INSERT INTO replay_leases (record_id, job_id, owner, until, replay_id)
	SELECT id, $4, $2, $3, coalesce($6, $5 || id::text) FROM unnest($1::bigint[]) id ORDER BY id
	RETURNING record_id, replay_id, true`

// $1 new leases, $2 now, $3 actor, $4 owner, $5 lease until, $6 job (NULL: none), $7
// leases taken over. A statement of its own, on a snapshot taken after the lease's insert
// ended: it sees every writer that committed before (one that held a lease key the
// insert waited for, above all). It reads each record's row once (seen). A new lease
// stays when its record is parked and not reserved by another active job, or scheduled
// and not claimed by a redrive (nor reserved): its row then carries the lease in
// lease_until, so that no redrive claims it (the UPDATE waits for a claim in progress and
// re-reads the row it committed). A scheduled record taken over carries its new holder.
// It deletes the other new leases and returns their ids.
const sqlRecheckReplays = `WITH seen AS (
		SELECT d.id, d.status = 'parked' AND (d.job_id IS NULL OR d.job_id = $6 OR NOT ` + activeJobOfRow + `) AS parked
		FROM dead_letters d WHERE d.id = ANY($1) OR d.id = ANY($7)),
	kept AS (
		UPDATE dead_letters d SET lease_owner = $4, lease_until = $5, changed_at = $2, changed_by = $3
		WHERE d.id IN (SELECT id FROM seen WHERE NOT parked) AND d.status = 'scheduled' AND (d.id = ANY($7)
			OR (d.lease_until IS NULL OR d.lease_until <= $2)
			AND (d.job_id IS NULL OR d.job_id = $6 OR NOT ` + activeJobOfRow + `))
		RETURNING d.id),
	lost AS (
		SELECT u.id FROM unnest($1::bigint[]) u(id)
		WHERE u.id NOT IN (SELECT id FROM kept) AND u.id NOT IN (SELECT id FROM seen WHERE parked))
	DELETE FROM replay_leases l WHERE l.record_id IN (SELECT id FROM lost) AND l.owner = $4
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

// $1 ids, $2 now, $3 actor, $4 owner, then parallel arrays of topic, partition, offset in
// the order of $1: each record whose lease owner holds is replayed: its lease keeps where
// it was produced, when and by whom, an update of a narrow row that changes no indexed
// column (HOT); the record reads as replayed from now on, and its row changes once the
// job has ended (sqlFoldReplays). The leases are found by their keys (= ANY($1)), not by a
// scan of a table a running job fills.
const sqlFinishReplays = `UPDATE replay_leases l SET replayed_at = $2, replayed_by = $3,
		target_topic = u.topic, produced_partition = u.part, produced_offset = u.off
	FROM unnest($1::bigint[], $5::text[], $6::integer[], $7::bigint[]) AS u(id, topic, part, off)
	WHERE l.record_id = ANY($1) AND l.record_id = u.id AND l.owner = $4 AND l.replayed_at IS NULL
	RETURNING l.record_id`

// $1 limit, $2 job (0: any): up to $1 replayed leases of jobs that ended move into their records' rows
// (status replayed, with the lease's job, replay id, produced position and change) and
// are deleted; what readers see does not change. SKIP LOCKED lets several runners fold
// at once; the leases are deleted by their keys, not by a scan joined to them.
const sqlFoldReplays = `WITH done AS (
		SELECT l.record_id FROM replay_leases l
		WHERE l.replayed_at IS NOT NULL AND ($2::bigint = 0 OR l.job_id = $2) AND NOT ` + activeJobOfLease + `
		ORDER BY l.record_id LIMIT $1
		FOR UPDATE SKIP LOCKED),
	gone AS (
		DELETE FROM replay_leases l WHERE l.record_id = ANY(ARRAY(SELECT record_id FROM done))
		RETURNING l.*)
	UPDATE dead_letters d SET status = 'replayed', lease_owner = NULL, lease_until = NULL,
		job_id = g.job_id, replay_id = g.replay_id,
		target_topic = g.target_topic, produced_partition = g.produced_partition, produced_offset = g.produced_offset,
		changed_at = g.replayed_at, changed_by = g.replayed_by
	FROM gone g WHERE d.id = g.record_id`

// $1 now, $2 actor: the expired leases of jobs that ended.
const sqlReturnExpiredReplays = `WITH gone AS (
		DELETE FROM replay_leases l WHERE l.replayed_at IS NULL AND l.until <= $1 AND NOT ` + activeJobOfLease + `
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
		DELETE FROM replay_leases l WHERE l.record_id = ANY($1) AND l.owner = $4 AND l.replayed_at IS NULL
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
