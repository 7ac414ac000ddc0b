package store

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// A replayed record's lease holds the outcome until the runner folds it into the row.
const sqlDLQRows = `SELECT d.dlq_partition, d.dlq_offset, coalesce(l.status, d.status),
		coalesce(l.target_topic, d.target_topic, ''), coalesce(l.replay_id, d.replay_id, '')
	FROM dead_letters d LEFT JOIN (SELECT record_id, 'replayed' AS status, target_topic, replay_id
		FROM replay_states WHERE replayed_at IS NOT NULL) l ON l.record_id = d.id
	WHERE d.dlq_topic = $1`

// AuditRow is what the conservation audit needs of a stored record: its status and, once
// replayed, where to and under which replay id.
type AuditRow struct {
	Status      Status
	TargetTopic string
	ReplayID    string
}

// DLQRows returns every stored record read from dlqTopic, by DLQ coordinates, for the
// conservation audit.
func (s *AuditLog) DLQRows(ctx context.Context, dlqTopic string) (map[Coordinates]AuditRow, error) {
	rows, err := s.pool.Query(ctx, sqlDLQRows, dlqTopic)
	if err != nil {
		return nil, interpretError(err)
	}
	out := map[Coordinates]AuditRow{}
	c := Coordinates{Topic: dlqTopic}
	var r AuditRow
	_, err = pgx.ForEachRow(rows, []any{&c.Partition, &c.Offset, &r.Status, &r.TargetTopic, &r.ReplayID}, func() error {
		out[c] = r
		return nil
	})
	return out, interpretError(err)
}
