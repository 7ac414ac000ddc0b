package store

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
)

// $1 route, $2 now.
const sqlOldestDue = `SELECT due_at FROM dead_letters
	WHERE status = 'scheduled' AND route = $1 AND due_at <= $2
	ORDER BY due_at LIMIT 1`

// OldestDue returns the due time of route's oldest scheduled record that is due and not
// redriven yet, and false when there is none.
func (s *Runs) OldestDue(ctx context.Context, route string) (time.Time, bool, error) {
	var due time.Time
	err := s.pool.QueryRow(ctx, sqlOldestDue, route, s.now()).Scan(&due)
	if errors.Is(err, pgx.ErrNoRows) {
		return time.Time{}, false, nil
	}
	if err != nil {
		return time.Time{}, false, interpretError(err)
	}
	return due.UTC(), true, nil
}
