package store

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/dlqops/dlq/internal/store/dbsqlc"
)

// OldestDue returns the due time of route's oldest scheduled record that is due and not
// redriven yet, and false when there is none.
func (s *Runs) OldestDue(ctx context.Context, route string) (time.Time, bool, error) {
	due, err := queries.OldestDue(ctx, s.pool, dbsqlc.OldestDueParams{Route: route, Now: s.now()})
	if errors.Is(err, pgx.ErrNoRows) {
		return time.Time{}, false, nil
	}
	if err != nil {
		return time.Time{}, false, interpretError(err)
	}
	return due.UTC(), true, nil
}
