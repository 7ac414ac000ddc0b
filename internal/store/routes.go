package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/dlqops/dlq/internal/store/dbsqlc"
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
	// Schedule is the cron schedule a worker runs the route on; empty until a worker
	// reported it.
	Schedule string
	// LastRunEndedAt is when the route's most recent finished run ended, an idle one
	// included; zero before its first run ended. Only RouteControls reads it.
	LastRunEndedAt time.Time
	// BreakerOverride is an operator's forced breaker state; BreakerAuto leaves the
	// breaker to itself (route_breakers.go).
	BreakerOverride       BreakerOverride
	BreakerOverrideReason string
	// Breaker is the breaker's state as a worker last reported it; zero until one did.
	Breaker BreakerReport
}

// RouteControls returns every route an operator has touched; a route absent from the list
// runs on its schedule.
func (s *Runs) RouteControls(ctx context.Context) ([]RouteControl, error) {
	rows, err := queries.RouteControls(ctx, s.pool)
	if err != nil {
		return nil, interpretError(err)
	}
	ends, err := queries.LastRunEnds(ctx, s.pool)
	if err != nil {
		return nil, interpretError(err)
	}
	endOf := make(map[string]time.Time, len(ends))
	for _, e := range ends {
		endOf[e.Route] = e.FinishedAt.UTC()
	}
	out := make([]RouteControl, len(rows))
	for i, row := range rows {
		out[i] = routeControlFromRow(row)
		out[i].LastRunEndedAt = endOf[row.Route]
	}
	return out, nil
}

// PauseRoute pauses (paused true) or resumes a route. Only routes a worker registered
// exist: another name is ErrNotFound (with the audit row of the refusal).
func (s *Runs) PauseRoute(ctx context.Context, route string, paused bool, actor Actor) (RouteControl, error) {
	action := "resume_route"
	if paused {
		action = "pause_route"
	}
	return s.routeAction(ctx, route, actor, action, "", func(tx pgx.Tx, now time.Time) (dbsqlc.RouteControlsRow, error) {
		row, err := queries.PauseRoute(ctx, tx, dbsqlc.PauseRouteParams{Paused: paused, Actor: actor.Name, Now: now, Route: route})
		return dbsqlc.RouteControlsRow(row), err
	})
}

// RequestRun asks the workers of a route to run it now; ErrNotFound as PauseRoute.
func (s *Runs) RequestRun(ctx context.Context, route string, actor Actor) (RouteControl, error) {
	return s.routeAction(ctx, route, actor, "request_run", "", func(tx pgx.Tx, now time.Time) (dbsqlc.RouteControlsRow, error) {
		row, err := queries.RequestRun(ctx, tx, dbsqlc.RequestRunParams{Now: now, Actor: actor.Name, Route: route})
		return dbsqlc.RouteControlsRow(row), err
	})
}

// AckRunRequest clears a run-now request once a worker started the run. requestedAt is the
// RunRequestedAt the worker saw, so that a newer request is kept.
func (s *Runs) AckRunRequest(ctx context.Context, route string, requestedAt time.Time) error {
	return interpretError(queries.AckRunRequest(ctx, s.pool, dbsqlc.AckRunRequestParams{Route: route, RequestedAt: requestedAt}))
}

// routeAction changes a route control with change, which returns pgx.ErrNoRows for a
// route no worker registered, and writes its audit row with the operator's reason.
func (s *Runs) routeAction(ctx context.Context, route string, actor Actor, action, reason string,
	change func(tx pgx.Tx, now time.Time) (dbsqlc.RouteControlsRow, error)) (RouteControl, error) {
	if route == "" {
		return RouteControl{}, &ValidationError{Field: "route", Reason: "empty"}
	}
	var rc RouteControl
	var outcome error
	now := s.now()
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		row, err := change(tx, now)
		affected := int64(1)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			outcome, affected = ErrNotFound, 0
		case err != nil:
			return err
		default:
			rc = routeControlFromRow(row)
		}
		return writeAudit(ctx, tx, AuditEntry{At: now, Actor: actor.Name, RequestID: actor.RequestID, ClientRequestID: actor.ClientRequestID,
			Action: action, Route: route, Affected: affected, Outcome: outcomeOf(outcome), Reason: reason})
	})
	if err == nil && outcome != nil {
		err = fmt.Errorf("route %q: %w", route, &refusal{outcome})
	}
	return rc, err
}
