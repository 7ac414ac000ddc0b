package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// RouteControl is what operators set for a route; workers poll it.
type RouteControl struct {
	Route  string
	Paused bool
	// RunRequestedAt is when an operator asked for a run now; zero when none is pending.
	RunRequestedAt time.Time
	UpdatedBy      string
	UpdatedAt      time.Time
	// NextRunAt is when the route's schedule fires next, as a worker's scheduler has it;
	// zero until a worker reported it.
	NextRunAt time.Time
}

// RouteControls returns every route an operator has touched; a route absent from the list
// runs on its schedule.
func (s *Runs) RouteControls(ctx context.Context) ([]RouteControl, error) {
	rows, err := s.pool.Query(ctx, sqlRouteControls)
	if err != nil {
		return nil, interpretError(err)
	}
	return collect(rows, scanRouteControl)
}

// PauseRoute pauses (paused true) or resumes a route. Only routes a worker registered
// exist: another name is ErrNotFound (with the audit row of the refusal).
func (s *Runs) PauseRoute(ctx context.Context, route string, paused bool, actor Actor) (RouteControl, error) {
	action := "resume_route"
	if paused {
		action = "pause_route"
	}
	return s.routeAction(ctx, route, actor, action, sqlPauseRoute, paused)
}

// RequestRun asks the workers of a route to run it now; ErrNotFound as PauseRoute.
func (s *Runs) RequestRun(ctx context.Context, route string, actor Actor) (RouteControl, error) {
	return s.routeAction(ctx, route, actor, "request_run", sqlRequestRun)
}

// AckRunRequest clears a run-now request once a worker started the run. requestedAt is the
// RunRequestedAt the worker saw, so that a newer request is kept.
func (s *Runs) AckRunRequest(ctx context.Context, route string, requestedAt time.Time) error {
	_, err := s.pool.Exec(ctx, sqlAckRunRequest, route, requestedAt)
	return interpretError(err)
}

// routeAction upserts a route control with query ($1 route, $2 now, $3 actor, then args)
// and its audit row.
func (s *Runs) routeAction(ctx context.Context, route string, actor Actor, action, query string, args ...any) (RouteControl, error) {
	if route == "" {
		return RouteControl{}, &ValidationError{Field: "route", Reason: "empty"}
	}
	var rc RouteControl
	var outcome error
	now := s.now()
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		var err error
		rc, err = scanRouteControl(tx.QueryRow(ctx, query, append([]any{route, now, actor.Name}, args...)...))
		affected := int64(1)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			outcome, affected = ErrNotFound, 0
		case err != nil:
			return err
		}
		return writeAudit(ctx, tx, AuditEntry{At: now, Actor: actor.Name, RequestID: actor.RequestID, ClientRequestID: actor.ClientRequestID,
			Action: action, Route: route, Affected: affected, Outcome: outcomeOf(outcome)})
	})
	if err == nil && outcome != nil {
		err = fmt.Errorf("route %q: %w", route, &refusal{outcome})
	}
	return rc, err
}

func scanRouteControl(row scanner) (RouteControl, error) {
	var rc RouteControl
	var requested, next *time.Time
	err := row.Scan(&rc.Route, &rc.Paused, &requested, &rc.UpdatedBy, &rc.UpdatedAt, &next)
	rc.RunRequestedAt, rc.NextRunAt = deref(requested), deref(next)
	utc(&rc.RunRequestedAt, &rc.UpdatedAt, &rc.NextRunAt)
	return rc, err
}
