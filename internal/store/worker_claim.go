package store

import "context"

// $1 token, $2 now, $3 ids, $4 reason, $5 error message.
const sqlParkClaimed = `UPDATE dead_letters SET status = 'parked', reason = $4, error_message = $5,
		due_at = NULL, lease_owner = NULL, lease_until = NULL, changed_at = $2, changed_by = $1
	WHERE id = ANY($3) AND status = 'scheduled' AND lease_owner = $1`

// ParkClaimed parks claimed scheduled records that cannot be produced (the original topic
// is gone, the record is too large, ...) with reason, and returns how many it parked.
func (s *Records) ParkClaimed(ctx context.Context, token string, ids []int64, reason Reason, errMsg string) (int, error) {
	tag, err := s.pool.Exec(ctx, sqlParkClaimed, token, s.now(), ids, string(reason), cleanText(errMsg))
	return int(tag.RowsAffected()), interpretError(err)
}
