package store

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// RunStatus is the state of a redrive run.
type RunStatus string

const (
	RunRunning   RunStatus = "running"
	RunSucceeded RunStatus = "succeeded"
	RunFailed    RunStatus = "failed"
)

// Run is one bounded redrive run of a route.
type Run struct {
	ID         int64
	Route      string
	WorkerID   string
	Status     RunStatus
	Error      string
	StartedAt  time.Time
	FinishedAt time.Time
	Ledger     []LedgerEntry
}

// LedgerEntry accounts for the DLQ offsets [From, To) of one partition that a run
// committed: every offset in the range is redriven, scheduled, parked or skipped (absent
// from the log). Errors counts failed attempts and is not part of the sum.
type LedgerEntry struct {
	RunID      int64
	Topic      string
	Partition  int32
	From, To   int64
	Redriven   int64
	Scheduled  int64
	Parked     int64
	Skipped    int64
	Errors     int64
	RecordedAt time.Time
}

// BeginRun records the start of a run.
func (s *Runs) BeginRun(ctx context.Context, route, workerID string) (Run, error) {
	r := Run{Route: route, WorkerID: workerID, Status: RunRunning, StartedAt: s.now()}
	err := s.pool.QueryRow(ctx, sqlBeginRun, route, workerID, r.StartedAt).Scan(&r.ID)
	return r, interpretError(err)
}

// $1 route, $2 worker, $3 now.
const sqlExtendIdleRun = `UPDATE redrive_runs SET finished_at = $3, worker_id = $2
	WHERE id = (SELECT max(id) FROM redrive_runs WHERE route = $1) AND idle`

// $1 route, $2 worker, $3 status, $4 error, $5 started, $6 now, $7 idle.
const sqlInsertFinishedRun = `INSERT INTO redrive_runs (route, worker_id, status, error, started_at, finished_at, idle)
	VALUES ($1, $2, $3, $4, $5, $6, $7)`

// FinishIdleRun records a run that found nothing to do (no DLQ record to read, no due
// scheduled record); such a run writes no row while it runs. A succeeded one is folded
// into the route's newest run when that is an idle one too (its end moves): consecutive
// idle runs are one row. A failed one always gets a row of its own.
// It started elapsed ago.
func (s *Runs) FinishIdleRun(ctx context.Context, route, workerID string, elapsed time.Duration, status RunStatus, errMsg string) error {
	now := s.now()
	started := now.Add(-elapsed)
	return s.inTx(ctx, func(tx pgx.Tx) error {
		idle := status == RunSucceeded
		if idle {
			tag, err := tx.Exec(ctx, sqlExtendIdleRun, route, workerID, now)
			if err != nil || tag.RowsAffected() > 0 {
				return err
			}
		}
		_, err := tx.Exec(ctx, sqlInsertFinishedRun, route, workerID, string(status), cleanText(errMsg), started, now, idle)
		return err
	})
}

// RecordLedger stores a ledger entry on its own, for ranges that stored no records (all
// redriven or skipped); StoreBatch takes one to store with its records.
func (s *Runs) RecordLedger(ctx context.Context, e LedgerEntry) error {
	return s.inTx(ctx, func(tx pgx.Tx) error { return insertLedger(ctx, tx, &e, s.now()) })
}

func insertLedger(ctx context.Context, tx pgx.Tx, e *LedgerEntry, now time.Time) error {
	args, err := ledgerArgs(e.RunID, e, now)
	if err != nil {
		return err
	}
	_, err = tx.Exec(ctx, sqlInsertLedger, args...)
	return err
}

// ledgerArgs are sqlInsertLedger's arguments for e as a row of run runID.
func ledgerArgs(runID int64, e *LedgerEntry, now time.Time) ([]any, error) {
	if e.From > e.To {
		return nil, &ValidationError{Field: "ledger", Reason: "from is above to"}
	}
	return []any{runID, e.Topic, e.Partition, e.From, e.To, e.Redriven, e.Scheduled, e.Parked, e.Skipped, e.Errors, now}, nil
}

// RunEnd is what a running run writes when it ends.
type RunEnd struct {
	ID     int64
	Status RunStatus
	Error  string // empty on success
	// Ledger: the rows of the partitions it read (a row already recorded is kept).
	Ledger []LedgerEntry
	// Positions: ledger positions of Group to advance, for the commit that follows.
	Group     string
	Positions []Coordinates
}

// EndRun records the end of a running run: it writes e in one transaction and one round trip (a batch: PostgreSQL runs it as
// one implicit transaction): the positions, the ledger rows, then the run's finish.
// ErrConflict: the run was not running any more; the rest is written all the same.
func (s *Runs) EndRun(ctx context.Context, e RunEnd) error {
	now := s.now()
	var b pgx.Batch
	if len(e.Positions) > 0 {
		topics, parts, offs := coordinateColumns(e.Positions)
		b.Queue(sqlAdvancePositions, e.Group, topics, parts, offs, now)
	}
	for i := range e.Ledger {
		args, err := ledgerArgs(e.ID, &e.Ledger[i], now)
		if err != nil {
			return err
		}
		b.Queue(sqlInsertLedger+` ON CONFLICT DO NOTHING`, args...)
	}
	finish := b.Queue(sqlFinishRun, e.ID, string(e.Status), cleanText(e.Error), now)
	finished := false
	finish.Exec(func(tag pgconn.CommandTag) error {
		finished = tag.RowsAffected() > 0
		return nil
	})
	if err := s.pool.SendBatch(ctx, &b).Close(); err != nil {
		return interpretError(err)
	}
	if !finished {
		return ErrConflict
	}
	return nil
}

// ListRuns returns the last limit runs of route ("" for all routes), newest first, each
// with its ledger.
func (s *Runs) ListRuns(ctx context.Context, route string, limit int) ([]Run, error) {
	if err := checkLimit(limit); err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, sqlListRuns, route, limit)
	if err != nil {
		return nil, interpretError(err)
	}
	runs, err := collect(rows, func(row scanner) (Run, error) {
		var r Run
		var finished *time.Time
		err := row.Scan(&r.ID, &r.Route, &r.WorkerID, &r.Status, &r.Error, &r.StartedAt, &finished)
		r.FinishedAt = deref(finished)
		utc(&r.StartedAt, &r.FinishedAt)
		return r, err
	})
	if err != nil || len(runs) == 0 {
		return runs, err
	}
	ids := make([]int64, len(runs))
	byID := make(map[int64]*Run, len(runs))
	for i := range runs {
		ids[i] = runs[i].ID
		byID[runs[i].ID] = &runs[i]
	}
	rows, err = s.pool.Query(ctx, sqlListLedger, ids)
	if err != nil {
		return nil, interpretError(err)
	}
	var e LedgerEntry
	_, err = pgx.ForEachRow(rows, []any{&e.RunID, &e.Topic, &e.Partition, &e.From, &e.To,
		&e.Redriven, &e.Scheduled, &e.Parked, &e.Skipped, &e.Errors, &e.RecordedAt}, func() error {
		utc(&e.RecordedAt)
		r := byID[e.RunID]
		r.Ledger = append(r.Ledger, e)
		return nil
	})
	return runs, interpretError(err)
}
