package store

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/dlqops/dlq/internal/store/dbsqlc"
)

// BreakerOverride is what an operator forces a route's breaker to.
type BreakerOverride string

const (
	// BreakerAuto leaves the breaker to itself: it opens when most of what the route
	// redrove comes back and closes when its probes stop coming back.
	BreakerAuto BreakerOverride = ""
	// BreakerForceOpen holds every record of the route as scheduled, retry counts untouched.
	BreakerForceOpen BreakerOverride = "open"
	// BreakerForceClosed redrives whatever comes back, as if the route had no breaker.
	BreakerForceClosed BreakerOverride = "closed"
)

// BreakerReport is a route breaker's state as a worker reports it.
type BreakerReport struct {
	// State is closed, open, half_open, forced_open or forced_closed; "" until reported.
	State string
	Since time.Time
	// ReturnedRatio is the share of what the route redrove in the breaker's window that
	// came back to the DLQ, when the state was entered.
	ReturnedRatio float64
	ReportedBy    string
}

// SetBreakerOverride forces a route's breaker open or closed, or gives it back to the
// automatic breaker (BreakerAuto), with the operator's reason in the audit row. Only
// routes a worker registered exist: another name is ErrNotFound (audited too).
func (s *Runs) SetBreakerOverride(ctx context.Context, route string, o BreakerOverride, reason string, actor Actor) (RouteControl, error) {
	var override, why *string
	action := "breaker_auto"
	switch o {
	case BreakerAuto:
	case BreakerForceOpen, BreakerForceClosed:
		v := string(o)
		override, why, action = &v, &reason, "breaker_force_"+v
	default:
		return RouteControl{}, &ValidationError{Field: "mode", Reason: "open, closed or auto"}
	}
	return s.routeAction(ctx, route, actor, action, reason, func(tx pgx.Tx, now time.Time) (dbsqlc.RouteControlsRow, error) {
		row, err := queries.SetBreakerOverride(ctx, tx, dbsqlc.SetBreakerOverrideParams{Override: override, Reason: why,
			Actor: actor.Name, Now: now, Route: route})
		return dbsqlc.RouteControlsRow(row), err
	})
}

// ReportBreaker records a route breaker's state for operators; a route no worker
// registered is left alone.
func (s *Runs) ReportBreaker(ctx context.Context, route string, r BreakerReport) error {
	return interpretError(queries.ReportBreaker(ctx, s.pool, dbsqlc.ReportBreakerParams{State: r.State, Since: r.Since,
		ReturnedRatio: r.ReturnedRatio, ReportedBy: r.ReportedBy, Route: route}))
}
