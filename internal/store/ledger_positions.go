package store

import (
	"context"
	"time"

	"github.com/dlqops/dlq/internal/store/dbsqlc"
)

// GapCause says why a range of DLQ offsets was not read in order.
type GapCause string

const (
	// GapJump: the committed offset was ahead of the ledger (reset, lost, moved by hand).
	GapJump GapCause = "jump"
	// GapBackward: the committed offset was behind the ledger; the range is read again.
	GapBackward GapCause = "backward"
	// GapBelowLogStart: the records were deleted (retention) before they were read.
	GapBelowLogStart GapCause = "below_log_start"
)

// Gap is a range [From, To) of one DLQ partition that a consumer group did not read in
// order: Lost when it was never read, else read again.
type Gap struct {
	Group, Route string
	Topic        string
	Partition    int32
	From, To     int64
	Cause        GapCause
	Lost         bool
	RecordedAt   time.Time
}

// AdvanceLedgerPositions records that group is about to commit each position (Offset is
// the offset to commit). A position only moves forward: a lower one is ignored.
func (s *Ledger) AdvanceLedgerPositions(ctx context.Context, group string, pos []Coordinates) error {
	return s.advancePositions(ctx, func(p dbsqlc.AdvancePositionsParams) error { return queries.AdvancePositions(ctx, s.pool, p) }, group, pos)
}

// AdvanceLedgerPositionsUnflushed is AdvanceLedgerPositions without waiting for
// PostgreSQL to flush the positions: they are visible to every reader at once (a worker
// restarted after a kill resumes at them), but a PostgreSQL crash may lose them until a
// FlushLedger that started after this call returned.
func (s *Ledger) AdvanceLedgerPositionsUnflushed(ctx context.Context, group string, pos []Coordinates) error {
	return s.advancePositions(ctx, func(p dbsqlc.AdvancePositionsParams) error {
		return queries.AdvancePositionsUnflushed(ctx, s.pool, dbsqlc.AdvancePositionsUnflushedParams(p))
	}, group, pos)
}

// advancePositions runs write, one of the two position writes, for pos.
func (s *Ledger) advancePositions(ctx context.Context, write func(dbsqlc.AdvancePositionsParams) error, group string, pos []Coordinates) error {
	if len(pos) == 0 {
		return nil
	}
	topics, parts, offs := coordinateColumns(pos)
	return interpretError(write(dbsqlc.AdvancePositionsParams{ConsumerGroup: group, Now: s.now(), Topics: topics, Partitions: parts, Offsets: offs}))
}

// FlushLedger returns once every ledger write committed before it is durable: it commits
// a write of its own synchronously, which waits for the WAL before it to be flushed (and
// sent to synchronous standbys, where the server has them).
func (s *Ledger) FlushLedger(ctx context.Context, group string) error {
	return interpretError(queries.FlushLedger(ctx, s.pool, dbsqlc.FlushLedgerParams{ConsumerGroup: group, Now: s.now()}))
}

// coordinateColumns are pos as columns, for unnest.
func coordinateColumns(pos []Coordinates) (topics []string, parts []int32, offs []int64) {
	topics, parts, offs = make([]string, len(pos)), make([]int32, len(pos)), make([]int64, len(pos))
	for i, c := range pos {
		topics[i], parts[i], offs[i] = c.Topic, c.Partition, c.Offset
	}
	return topics, parts, offs
}

// TouchLedgerPositions marks the positions of group's partitions in pos (Offset unused) as
// held now, unless they were marked within fresh, so that retention (Retention.Ledger)
// keeps the positions of idle partitions a worker still holds.
func (s *Ledger) TouchLedgerPositions(ctx context.Context, group string, pos []Coordinates, fresh time.Duration) error {
	if len(pos) == 0 {
		return nil
	}
	topics, parts := make([]string, len(pos)), make([]int32, len(pos))
	for i, c := range pos {
		topics[i], parts[i] = c.Topic, c.Partition
	}
	now := s.now()
	return interpretError(queries.TouchPositions(ctx, s.pool, dbsqlc.TouchPositionsParams{Now: now, ConsumerGroup: group,
		FreshBefore: now.Add(-fresh), Topics: topics, Partitions: parts}))
}

// LedgerPositions returns where the ledger says group last committed, per partition
// (Offset is the committed offset); partitions it never committed are absent.
func (s *Ledger) LedgerPositions(ctx context.Context, group string) ([]Coordinates, error) {
	rows, err := queries.LedgerPositions(ctx, s.pool, group)
	if err != nil {
		return nil, interpretError(err)
	}
	out := make([]Coordinates, len(rows))
	for i, row := range rows {
		out[i] = Coordinates{Topic: row.DlqTopic, Partition: row.DlqPartition, Offset: row.CommittedOffset}
	}
	return out, nil
}

// RecordGap stores a range read out of order; RecordedAt is set by the store.
func (s *Ledger) RecordGap(ctx context.Context, g Gap) error {
	if g.From >= g.To {
		return &ValidationError{Field: "gap", Reason: "from must be below to"}
	}
	return interpretError(queries.InsertGap(ctx, s.pool, dbsqlc.InsertGapParams{ConsumerGroup: g.Group, Route: g.Route,
		DlqTopic: g.Topic, DlqPartition: g.Partition, FromOffset: g.From, ToOffset: g.To, Cause: string(g.Cause), Lost: g.Lost,
		RecordedAt: s.now()}))
}

// LedgerGaps returns the gaps of group on topic, by partition and offset.
func (s *Ledger) LedgerGaps(ctx context.Context, group, topic string) ([]Gap, error) {
	rows, err := queries.LedgerGaps(ctx, s.pool, dbsqlc.LedgerGapsParams{ConsumerGroup: group, DlqTopic: topic})
	if err != nil {
		return nil, interpretError(err)
	}
	out := make([]Gap, len(rows))
	for i, row := range rows {
		out[i] = Gap{Group: row.ConsumerGroup, Route: row.Route, Topic: row.DlqTopic, Partition: row.DlqPartition,
			From: row.FromOffset, To: row.ToOffset, Cause: GapCause(row.Cause), Lost: row.Lost, RecordedAt: row.RecordedAt.UTC()}
	}
	return out, nil
}
