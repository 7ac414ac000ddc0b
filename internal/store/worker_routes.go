package store

import (
	"context"
	"time"
)

// $1 routes, $2 now, $3 by. Existing controls (a pause an operator set) are kept.
const sqlRegisterRoutes = `INSERT INTO route_controls (route, updated_by, updated_at)
	SELECT r, $3, $2 FROM unnest($1::text[]) AS r
	ON CONFLICT (route) DO NOTHING`

// RegisterRoutes makes the routes a worker serves visible in RouteControls (not paused,
// no run requested) without touching the controls of routes already known.
func (s *Runs) RegisterRoutes(ctx context.Context, routes []string, by string) error {
	_, err := s.pool.Exec(ctx, sqlRegisterRoutes, routes, s.now(), by)
	return interpretError(err)
}

const sqlSetNextRun = `UPDATE route_controls SET next_run_at = $2 WHERE route = $1`

// SetNextRun records when a registered route's schedule fires next, for operators.
func (s *Runs) SetNextRun(ctx context.Context, route string, at time.Time) error {
	_, err := s.pool.Exec(ctx, sqlSetNextRun, route, at)
	return interpretError(err)
}
