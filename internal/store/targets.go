package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/dlqops/dlq/internal/store/dbsqlc"
)

// PublishRouteTargets stores, for each route a job runner serves, the allowed_targets it
// applies to replays (empty: any topic), so that dlq-admin refuses a replay to a forbidden
// topic before accepting it. Operator controls of the routes are kept.
func (s *Runs) PublishRouteTargets(ctx context.Context, allowed map[string][]string, by string) error {
	now := s.now()
	return s.inTx(ctx, func(tx pgx.Tx) error {
		for route, targets := range allowed {
			if targets == nil {
				targets = []string{} // NULL would read as not published
			}
			if err := queries.PublishRouteTargets(ctx, tx, dbsqlc.PublishRouteTargetsParams{Route: route, AllowedTargets: targets,
				UpdatedBy: by, Now: now}); err != nil {
				return err
			}
		}
		return nil
	})
}

// Destination is a route and an original topic that records of a selection share, with
// the allowed_targets a job runner published for the route.
type Destination struct {
	Route         string
	OriginalTopic string // "" for records without one
	// Published is false when no job runner has published the route's rules: only the
	// runner can decide then.
	Published      bool
	AllowedTargets []string
}

// Destinations returns the distinct routes and original topics of the records f (or, when
// f is nil, ids) selects.
func (s *Runs) Destinations(ctx context.Context, f *Filter, ids []int64) ([]Destination, error) {
	cond, args := "id = ANY($1)", []any{ids}
	if f != nil {
		cond, args = f.where(nil)
	}
	rows, err := s.pool.Query(ctx, fmt.Sprintf(sqlDestinations, cond), args...)
	if err != nil {
		return nil, interpretError(err)
	}
	return collect(rows, func(row scanner) (Destination, error) {
		var d Destination
		err := row.Scan(&d.Route, &d.OriginalTopic, &d.AllowedTargets)
		d.Published = d.AllowedTargets != nil
		return d, err
	})
}

const sqlDestinations = `SELECT s.route, s.topic, rc.allowed_targets
	FROM (SELECT DISTINCT route, coalesce(original_topic, '') AS topic FROM dead_letters WHERE %s) s
	LEFT JOIN route_controls rc ON rc.route = s.route
	ORDER BY 1, 2`
