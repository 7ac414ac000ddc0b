package store

import "context"

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
	rows, err := queries.DLQRows(ctx, s.pool, dlqTopic)
	if err != nil {
		return nil, interpretError(err)
	}
	out := make(map[Coordinates]AuditRow, len(rows))
	for _, row := range rows {
		out[Coordinates{Topic: dlqTopic, Partition: row.DlqPartition, Offset: row.DlqOffset}] = AuditRow{Status: Status(row.Status),
			TargetTopic: row.TargetTopic, ReplayID: row.ReplayID}
	}
	return out, nil
}
