package store

import (
	"context"

	"github.com/jackc/pgx/v5"
)

const sqlDLQStatuses = `SELECT dlq_partition, dlq_offset, status FROM dead_letters WHERE dlq_topic = $1`

// DLQStatuses returns the status of every stored record read from dlqTopic, by DLQ
// coordinates, for the conservation audit.
func (s *Store) DLQStatuses(ctx context.Context, dlqTopic string) (map[Coordinates]Status, error) {
	rows, err := s.pool.Query(ctx, sqlDLQStatuses, dlqTopic)
	if err != nil {
		return nil, interpretError(err)
	}
	out := map[Coordinates]Status{}
	c := Coordinates{Topic: dlqTopic}
	var st Status
	_, err = pgx.ForEachRow(rows, []any{&c.Partition, &c.Offset, &st}, func() error {
		out[c] = st
		return nil
	})
	return out, interpretError(err)
}
