package store

import (
	"context"
	"fmt"
)

// NoPayload reports whether r has no payload: a share group's dead letter parked
// source_unavailable with key and value null, because its source record was gone and the
// group kept no copy of it. What it holds is the broker's pointer, not a record: a
// replay of it would produce a record that never existed.
func (r *Record) NoPayload() bool {
	return r.Reason == ReasonSourceUnavailable && r.Key == nil && r.Value == nil
}

// CountNoPayload counts the records without payload (Record.NoPayload) among those f (or,
// when f is nil, ids) selects.
func (s *Records) CountNoPayload(ctx context.Context, f *Filter, ids []int64) (int64, error) {
	cond, args := "id = ANY($1)", []any{ids}
	if f != nil {
		cond, args = f.where(nil)
	}
	var n int64
	err := s.pool.QueryRow(ctx, fmt.Sprintf(sqlCountNoPayload, cond), args...).Scan(&n)
	return n, interpretError(err)
}

const sqlCountNoPayload = `SELECT count(*) FROM dead_letters
	WHERE (%s) AND reason = 'source_unavailable' AND key IS NULL AND value IS NULL`
