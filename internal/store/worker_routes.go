package store

import (
	"context"
	"time"

	"github.com/dlqops/dlq/internal/store/dbsqlc"
)

// RegisterRoutes makes the routes a worker serves visible in RouteControls (not paused,
// no run requested) without touching the controls of routes already known.
func (s *Runs) RegisterRoutes(ctx context.Context, routes []string, by string) error {
	return interpretError(queries.RegisterRoutes(ctx, s.pool, dbsqlc.RegisterRoutesParams{UpdatedBy: by, Now: s.now(), Routes: routes}))
}

// SetNextRun records a registered route's cron schedule and when it fires next, for operators.
func (s *Runs) SetNextRun(ctx context.Context, route, schedule string, at time.Time) error {
	return interpretError(queries.SetNextRun(ctx, s.pool, dbsqlc.SetNextRunParams{NextRunAt: at, Schedule: schedule, Route: route}))
}

// RegisteredRoutes is the names of the routes workers registered, in order.
func (s *Runs) RegisteredRoutes(ctx context.Context) ([]string, error) {
	names, err := queries.RegisteredRoutes(ctx, s.pool)
	return names, interpretError(err)
}
