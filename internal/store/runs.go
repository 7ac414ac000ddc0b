package store

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/dlqops/dlq/internal/store/dbsqlc"
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
	var err error
	r.ID, err = queries.BeginRun(ctx, s.pool, dbsqlc.BeginRunParams{Route: route, WorkerID: workerID, StartedAt: r.StartedAt})
	return r, interpretError(err)
}

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
			extended, err := queries.ExtendIdleRun(ctx, tx, dbsqlc.ExtendIdleRunParams{Now: now, WorkerID: workerID, Route: route})
			if err != nil || extended > 0 {
				return err
			}
		}
		return queries.InsertFinishedRun(ctx, tx, dbsqlc.InsertFinishedRunParams{Route: route, WorkerID: workerID,
			Status: string(status), Error: cleanText(errMsg), StartedAt: started, FinishedAt: now, Idle: idle})
	})
}

// RecordLedger stores a ledger entry on its own, for ranges that stored no records (all
// redriven or skipped); StoreBatch takes one to store with its records.
func (s *Runs) RecordLedger(ctx context.Context, e LedgerEntry) error {
	return s.inTx(ctx, func(tx pgx.Tx) error { return insertLedger(ctx, tx, &e, s.now()) })
}

func insertLedger(ctx context.Context, tx pgx.Tx, e *LedgerEntry, now time.Time) error {
	row, err := ledgerRow(e.RunID, e, now)
	if err != nil {
		return err
	}
	return queries.InsertLedger(ctx, tx, row)
}

// ledgerRow is e as a ledger row of run runID.
func ledgerRow(runID int64, e *LedgerEntry, now time.Time) (dbsqlc.InsertLedgerParams, error) {
	if e.From > e.To {
		return dbsqlc.InsertLedgerParams{}, &ValidationError{Field: "ledger", Reason: "from is above to"}
	}
	return dbsqlc.InsertLedgerParams{RunID: runID, DlqTopic: e.Topic, DlqPartition: e.Partition, FromOffset: e.From, ToOffset: e.To,
		Redriven: e.Redriven, Scheduled: e.Scheduled, Parked: e.Parked, Skipped: e.Skipped, Errors: e.Errors, RecordedAt: now}, nil
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
// The batch queues the generated statements' text with their parameters in their order.
func (s *Runs) EndRun(ctx context.Context, e RunEnd) error {
	now := s.now()
	var b pgx.Batch
	if len(e.Positions) > 0 {
		topics, parts, offs := coordinateColumns(e.Positions)
		b.Queue(dbsqlc.AdvancePositions, e.Group, now, topics, parts, offs)
	}
	for i := range e.Ledger {
		l, err := ledgerRow(e.ID, &e.Ledger[i], now)
		if err != nil {
			return err
		}
		b.Queue(dbsqlc.InsertLedgerOnce, l.RunID, l.DlqTopic, l.DlqPartition, l.FromOffset, l.ToOffset,
			l.Redriven, l.Scheduled, l.Parked, l.Skipped, l.Errors, l.RecordedAt)
	}
	finish := b.Queue(dbsqlc.FinishRun, string(e.Status), cleanText(e.Error), now, e.ID)
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
	rows, err := queries.ListRuns(ctx, s.pool, dbsqlc.ListRunsParams{Route: route, MaxRuns: int32(limit)})
	if err != nil {
		return nil, interpretError(err)
	}
	runs := make([]Run, len(rows))
	for i, row := range rows {
		runs[i] = Run{ID: row.ID, Route: row.Route, WorkerID: row.WorkerID, Status: RunStatus(row.Status), Error: row.Error,
			StartedAt: row.StartedAt, FinishedAt: deref(row.FinishedAt)}
		utc(&runs[i].StartedAt, &runs[i].FinishedAt)
	}
	if len(runs) == 0 {
		return runs, nil
	}
	ids := make([]int64, len(runs))
	byID := make(map[int64]*Run, len(runs))
	for i := range runs {
		ids[i] = runs[i].ID
		byID[runs[i].ID] = &runs[i]
	}
	ledger, err := queries.ListLedger(ctx, s.pool, ids)
	if err != nil {
		return nil, interpretError(err)
	}
	for _, l := range ledger {
		r := byID[l.RunID]
		r.Ledger = append(r.Ledger, LedgerEntry{RunID: l.RunID, Topic: l.DlqTopic, Partition: l.DlqPartition, From: l.FromOffset,
			To: l.ToOffset, Redriven: l.Redriven, Scheduled: l.Scheduled, Parked: l.Parked, Skipped: l.Skipped, Errors: l.Errors,
			RecordedAt: l.RecordedAt.UTC()})
	}
	return runs, nil
}
