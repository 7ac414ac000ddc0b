// An operator's override of a route's breaker: forced open, the route redrives nothing
// and its records wait as scheduled; forced closed, it redrives whatever comes back; auto
// gives the route back to its automatic breaker, with a fresh window. The override lives
// in PostgreSQL (route_controls); the controls goroutine hands it to the breaker, which
// applies it on the loop goroutine at its next decision.

package redrive

import (
	"time"

	"github.com/dlqops/dlq/internal/store"
)

// override hands the breaker an operator's override; safe from any goroutine.
func (b *breaker) override(o store.BreakerOverride, by string) {
	if c := b.wanted.Load(); c != nil && c.override == o {
		return
	}
	b.wanted.Store(&breakerControl{override: o, by: by})
}

// follow applies the operator's override when it changed.
func (b *breaker) follow(now time.Time) {
	c := b.wanted.Load()
	if c == nil || c.override == b.forced {
		return
	}
	b.forced = c.override
	b.probes, b.pending = nil, nil
	switch c.override {
	case store.BreakerForceOpen:
		b.until = time.Time{}
		b.move(now, breakerOpen, "forced open by "+c.by)
	case store.BreakerForceClosed:
		b.move(now, breakerClosed, "forced closed by "+c.by)
	default:
		b.seconds = nil // what came back while an operator decided is not the breaker's news
		b.move(now, breakerClosed, "given back to the automatic breaker by "+c.by)
	}
}

// stateName is the state as operators see it: forced_open and forced_closed while an
// operator's override holds.
func (b *breaker) stateName() string {
	switch b.forced {
	case store.BreakerForceOpen:
		return "forced_open"
	case store.BreakerForceClosed:
		return "forced_closed"
	}
	return b.state.String()
}

// returnedRatio is the share of what the window redrove that came back, at most 1: a
// record redriven again counts once (counts), so what comes back can outnumber it.
func (b *breaker) returnedRatio(now time.Time) float64 {
	redriven, returned := b.counts(now)
	if returned == 0 {
		return 0
	}
	if redriven == 0 {
		return 1
	}
	return min(1, float64(returned)/float64(redriven))
}
