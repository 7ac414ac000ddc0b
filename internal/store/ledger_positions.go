package store

import (
	"context"
	"time"
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

// $1 group, $2 topics, $3 partitions, $4 offsets, $5 now.
const sqlAdvancePositions = `INSERT INTO ledger_positions (consumer_group, dlq_topic, dlq_partition, committed_offset, updated_at)
	SELECT $1, t, p, o, $5 FROM unnest($2::text[], $3::integer[], $4::bigint[]) AS u(t, p, o)
	ON CONFLICT (consumer_group, dlq_topic, dlq_partition) DO UPDATE
	SET committed_offset = EXCLUDED.committed_offset, updated_at = EXCLUDED.updated_at
	WHERE ledger_positions.committed_offset < EXCLUDED.committed_offset`

// sqlAdvancePositionsUnflushed is sqlAdvancePositions committed asynchronously: the
// setting, local to the statement's own transaction, is read when it commits.
const sqlAdvancePositionsUnflushed = `WITH unflushed AS (SELECT set_config('synchronous_commit', 'off', true))
	INSERT INTO ledger_positions (consumer_group, dlq_topic, dlq_partition, committed_offset, updated_at)
	SELECT $1, t, p, o, $5 FROM unflushed, unnest($2::text[], $3::integer[], $4::bigint[]) AS u(t, p, o)
	ON CONFLICT (consumer_group, dlq_topic, dlq_partition) DO UPDATE
	SET committed_offset = EXCLUDED.committed_offset, updated_at = EXCLUDED.updated_at
	WHERE ledger_positions.committed_offset < EXCLUDED.committed_offset`

// $1 group, $2 now.
const sqlFlushLedger = `INSERT INTO ledger_flushes (consumer_group, flushed_at) VALUES ($1, $2)
	ON CONFLICT (consumer_group) DO UPDATE SET flushed_at = EXCLUDED.flushed_at`

// $1 group, $2 topics, $3 partitions, $4 now, $5 refreshed before. Only stale rows are
// written, so a worker may call it on every run.
const sqlTouchPositions = `UPDATE ledger_positions SET updated_at = $4
	FROM unnest($2::text[], $3::integer[]) AS u(t, p)
	WHERE consumer_group = $1 AND dlq_topic = u.t AND dlq_partition = u.p AND updated_at < $5`

const sqlLedgerPositions = `SELECT dlq_topic, dlq_partition, committed_offset FROM ledger_positions WHERE consumer_group = $1`

const sqlInsertGap = `INSERT INTO ledger_gaps (consumer_group, route, dlq_topic, dlq_partition, from_offset, to_offset, cause, lost, recorded_at)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`

const sqlLedgerGaps = `SELECT consumer_group, route, dlq_topic, dlq_partition, from_offset, to_offset, cause, lost, recorded_at
	FROM ledger_gaps WHERE consumer_group = $1 AND dlq_topic = $2 ORDER BY dlq_partition, from_offset, id`

// AdvanceLedgerPositions records that group is about to commit each position (Offset is
// the offset to commit). A position only moves forward: a lower one is ignored.
func (s *Ledger) AdvanceLedgerPositions(ctx context.Context, group string, pos []Coordinates) error {
	return s.advancePositions(ctx, sqlAdvancePositions, group, pos)
}

// AdvanceLedgerPositionsUnflushed is AdvanceLedgerPositions without waiting for
// PostgreSQL to flush the positions: they are visible to every reader at once (a worker
// restarted after a kill resumes at them), but a PostgreSQL crash may lose them until a
// FlushLedger that started after this call returned.
func (s *Ledger) AdvanceLedgerPositionsUnflushed(ctx context.Context, group string, pos []Coordinates) error {
	return s.advancePositions(ctx, sqlAdvancePositionsUnflushed, group, pos)
}

// advancePositions runs query, one of the two position writes, for pos.
func (s *Ledger) advancePositions(ctx context.Context, query, group string, pos []Coordinates) error {
	if len(pos) == 0 {
		return nil
	}
	topics, parts, offs := coordinateColumns(pos)
	_, err := s.pool.Exec(ctx, query, group, topics, parts, offs, s.now())
	return interpretError(err)
}

// FlushLedger returns once every ledger write committed before it is durable: it commits
// a write of its own synchronously, which waits for the WAL before it to be flushed (and
// sent to synchronous standbys, where the server has them).
func (s *Ledger) FlushLedger(ctx context.Context, group string) error {
	_, err := s.pool.Exec(ctx, sqlFlushLedger, group, s.now())
	return interpretError(err)
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
	_, err := s.pool.Exec(ctx, sqlTouchPositions, group, topics, parts, now, now.Add(-fresh))
	return interpretError(err)
}

// LedgerPositions returns where the ledger says group last committed, per partition
// (Offset is the committed offset); partitions it never committed are absent.
func (s *Ledger) LedgerPositions(ctx context.Context, group string) ([]Coordinates, error) {
	rows, err := s.pool.Query(ctx, sqlLedgerPositions, group)
	if err != nil {
		return nil, interpretError(err)
	}
	return collect(rows, func(row scanner) (Coordinates, error) {
		var c Coordinates
		err := row.Scan(&c.Topic, &c.Partition, &c.Offset)
		return c, err
	})
}

// RecordGap stores a range read out of order; RecordedAt is set by the store.
func (s *Ledger) RecordGap(ctx context.Context, g Gap) error {
	if g.From >= g.To {
		return &ValidationError{Field: "gap", Reason: "from must be below to"}
	}
	_, err := s.pool.Exec(ctx, sqlInsertGap, g.Group, g.Route, g.Topic, g.Partition, g.From, g.To, string(g.Cause), g.Lost, s.now())
	return interpretError(err)
}

// LedgerGaps returns the gaps of group on topic, by partition and offset.
func (s *Ledger) LedgerGaps(ctx context.Context, group, topic string) ([]Gap, error) {
	rows, err := s.pool.Query(ctx, sqlLedgerGaps, group, topic)
	if err != nil {
		return nil, interpretError(err)
	}
	return collect(rows, func(row scanner) (Gap, error) {
		var g Gap
		err := row.Scan(&g.Group, &g.Route, &g.Topic, &g.Partition, &g.From, &g.To, &g.Cause, &g.Lost, &g.RecordedAt)
		utc(&g.RecordedAt)
		return g, err
	})
}
