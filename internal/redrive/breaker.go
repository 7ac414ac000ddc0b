// The route's circuit breaker: while most of what the route redrove comes back to the DLQ
// (its downstream is down), redriving more only floods the source topic. The breaker counts
// the route's redrives and the records that come back (a returning dead letter carries the
// previous hop's dlq-redrive-id), opens, and holds the route's records in PostgreSQL as
// scheduled, retry counts untouched, until probes stop coming back. Everything here runs
// on the loop goroutine.

package redrive

import (
	"context"
	"fmt"
	"math"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/dlqops/dlq/internal/headers"
	"github.com/dlqops/dlq/internal/routes"
	"github.com/dlqops/dlq/internal/store"
)

// breakerState is the value of dlq_worker_route_breaker_state.
type breakerState uint8

const (
	breakerClosed   breakerState = 0
	breakerOpen     breakerState = 1
	breakerHalfOpen breakerState = 2
)

func (s breakerState) String() string {
	switch s {
	case breakerOpen:
		return "open"
	case breakerHalfOpen:
		return "half_open"
	default:
		return "closed"
	}
}

// breakerSecond is one second of the window: the redrives acknowledged in it, those of
// them that sent again a record that had come back, and the records that came back.
type breakerSecond struct {
	unix                      int64
	redriven, again, returned int64
	byCause                   map[string]int64 // the returns by cause (breaker_cause.go)
	// sampled first redrives, and their causes: what the route sends besides what comes back
	sampled     int64
	sentByCause map[string]int64
}

// countCause counts a return of cause, up to maxCausesPerSecond causes a second.
func (s *breakerSecond) countCause(cause string) { countIn(&s.byCause, cause) }

func countIn(m *map[string]int64, cause string) {
	if cause == "" {
		return
	}
	if *m == nil {
		*m = map[string]int64{}
	}
	if _, ok := (*m)[cause]; ok || len(*m) < maxCausesPerSecond {
		(*m)[cause]++
	}
}

// breakerAudit is what the breaker needs of the audit log.
type breakerAudit interface {
	Audit(ctx context.Context, e store.AuditEntry) error
}

// breakerControl is an operator's override as the controls goroutine read it.
type breakerControl struct {
	override store.BreakerOverride
	by       string
}

type breaker struct {
	cfg        routes.Breaker
	route      string
	instanceID string
	log        zerolog.Logger
	audit      breakerAudit
	gauge      prometheus.Gauge
	transits   *prometheus.CounterVec // dlq_worker_route_breaker_transitions_total{route,state}
	held       prometheus.Counter     // dlq_worker_route_breaker_held_total{route}

	state    breakerState
	seconds  []breakerSecond // the window, oldest first
	runStart time.Time       // the current run's: probes acknowledged before it had a run's time to come back
	until    time.Time       // while open: when probes may go

	// While half-open: the DLQ positions of the probes sent, those not yet acknowledged,
	// how many came back, how many may still go and when the last was acknowledged.
	probes    map[headers.Coordinates]bool
	pending   map[headers.Coordinates]bool
	back      int
	left      int
	lastAcked time.Time

	// causes are the causes held apart (breaker_cause.go), at most maxCauseBreakers.
	causes     *causeBreakers
	sampleTick int

	// wanted is the operator's override, stored by the controls goroutine; forced is the
	// override the loop applied (breaker_override.go). report is the state for operators,
	// published to PostgreSQL by the controls goroutine.
	wanted atomic.Pointer[breakerControl]
	forced store.BreakerOverride
	report atomic.Pointer[store.BreakerReport]
}

func newBreaker(r route, instanceID string, log zerolog.Logger, audit breakerAudit, m *metrics) *breaker {
	b := &breaker{cfg: r.Breaker, route: r.Name, instanceID: instanceID, log: log, audit: audit,
		gauge: m.breakerState.WithLabelValues(r.Name), transits: m.breakerTransitions, held: m.breakerHeld.WithLabelValues(r.Name)}
	b.causes = &causeBreakers{cfg: r.Breaker, route: r.Name, instanceID: instanceID, log: log, audit: audit,
		gauge: m.causeBreakerState, held: b.held, byCause: map[string]*causeBreaker{}}
	b.gauge.Set(float64(breakerClosed))
	b.report.Store(&store.BreakerReport{State: breakerClosed.String(), Since: time.Now().UTC(), ReportedBy: instanceID})
	return b
}

// startRun marks the start of a run: the probes acknowledged before it could have come
// back by its end. An open breaker whose open_for elapsed turns half-open.
func (b *breaker) startRun(now time.Time) {
	b.runStart = now
	b.tick(now)
}

func (b *breaker) tick(now time.Time) {
	b.follow(now)
	if b.forced == store.BreakerAuto && b.state == breakerOpen && !now.Before(b.until) {
		b.probes, b.pending, b.back, b.left, b.lastAcked = map[headers.Coordinates]bool{}, map[headers.Coordinates]bool{}, 0, b.cfg.Probes, time.Time{}
		b.transit(now, breakerHalfOpen, "open_for elapsed: probing")
	}
}

// allow reports whether the record read at from, of cause, may be redriven now; when
// half-open it takes one of the probes. cause is "" unless the record came back or
// holdsCauses.
func (b *breaker) allow(from headers.Coordinates, cause string, now time.Time) bool {
	b.tick(now)
	if b.forced != store.BreakerAuto {
		return b.forced == store.BreakerForceClosed
	}
	if b.cfg.Disabled {
		return true
	}
	switch b.state {
	case breakerClosed:
		if cb := b.causes.of(cause); cb != nil {
			return b.causes.allow(cb, from, now)
		}
		return true
	case breakerHalfOpen:
		if b.left > 0 {
			b.left--
			b.probes[from], b.pending[from] = true, true
			return true
		}
	}
	return false
}

// probesLeft is how many scheduled records the due phase may claim: all while closed.
func (b *breaker) probesLeft(now time.Time) int {
	b.tick(now)
	switch {
	case b.forced == store.BreakerForceOpen:
		return 0
	case b.forced == store.BreakerForceClosed, b.cfg.Disabled:
		return math.MaxInt
	}
	switch b.state {
	case breakerClosed:
		return math.MaxInt
	case breakerHalfOpen:
		return b.left
	}
	return 0
}

// holdUntil is the due time of a record of cause the breaker holds: when probes may go.
func (b *breaker) holdUntil(cause string, now time.Time) time.Time {
	if cb := b.causes.of(cause); cb != nil && b.state == breakerClosed && b.forced == store.BreakerAuto {
		return b.causes.holdUntil(cb, now)
	}
	b.held.Inc()
	if b.until.After(now) {
		return b.until
	}
	return now
}

// redriven counts an acknowledged redrive of the record read at from; again when that
// record had come back after an earlier redrive.
func (b *breaker) redriven(from headers.Coordinates, again bool, now time.Time) {
	s := b.second(now)
	s.redriven++
	if again {
		s.again++
	}
	if b.pending[from] {
		delete(b.pending, from)
		b.lastAcked = now
	}
	b.causes.acked(from, now)
}

// settled forgets a probe that will not be acknowledged (parked on a permanent failure).
func (b *breaker) settled(from headers.Coordinates) {
	delete(b.pending, from)
	b.causes.settled(from)
}

// returned counts a record of cause read from the DLQ that an earlier hop redrove from
// prev; the breaker, or the breaker of its cause, may open.
func (b *breaker) returned(prev headers.Coordinates, cause string, now time.Time) {
	if b.cfg.Disabled {
		return
	}
	if cb := b.causes.of(cause); cb != nil {
		if b.forced == store.BreakerAuto {
			b.causes.returned(cb, prev, now)
		}
		return // held apart: not the route's news
	}
	s := b.second(now)
	s.returned++
	s.countCause(cause)
	if b.forced != store.BreakerAuto {
		return // an operator decides; the window still counts, for the report
	}
	switch b.state {
	case breakerClosed:
		redriven, returned := b.counts(now)
		if returned >= int64(b.cfg.MinReturned) && float64(returned) >= b.cfg.Ratio*float64(redriven) {
			if b.holdApart(now, redriven) {
				return
			}
			b.open(now, fmt.Sprintf("%d of the %d records redriven within %s came back", returned, redriven, b.cfg.Window),
				func(e *zerolog.Event) *zerolog.Event {
					return e.Int64("returned", returned).Int64("redriven", redriven)
				})
		}
	case breakerHalfOpen:
		if b.probes[prev] {
			b.back++
			if b.back >= probeThreshold(b.cfg) {
				sent := len(b.probes)
				b.open(now, fmt.Sprintf("%d of %d probes came back", b.back, sent), func(e *zerolog.Event) *zerolog.Event {
					return e.Int("probes_returned", b.back).Int("probes", sent)
				})
			}
		}
	}
}

// endDLQPhase closes a half-open breaker whose probes did not come back by the end of a
// run's DLQ phase that started after they were all acknowledged.
func (b *breaker) endDLQPhase(now time.Time) {
	if b.forced == store.BreakerAuto {
		b.causes.endDLQPhase(b.runStart, now)
	}
	if b.forced != store.BreakerAuto || b.state != breakerHalfOpen || len(b.probes) == 0 || len(b.pending) > 0 || !b.runStart.After(b.lastAcked) {
		return
	}
	sent, back := len(b.probes), b.back
	b.seconds = nil // the returns before the close are not the route's news any more
	b.probes, b.pending = nil, nil
	b.transit(now, breakerClosed, fmt.Sprintf("%d of %d probes came back", back, sent), func(e *zerolog.Event) *zerolog.Event {
		return e.Int("probes_returned", back).Int("probes", sent)
	})
}

func (b *breaker) open(now time.Time, why string, figures func(*zerolog.Event) *zerolog.Event) {
	b.until = now.Add(b.cfg.OpenFor)
	b.probes, b.pending = nil, nil
	b.transit(now, breakerOpen, why, figures)
}

// transit moves the breaker to s and says so: the gauge, a counter, a log line with the
// figures and, for an open or a close, an audit row.
func (b *breaker) transit(now time.Time, s breakerState, why string, figures ...func(*zerolog.Event) *zerolog.Event) {
	b.move(now, s, why, figures...)
	if s == breakerHalfOpen {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	if err := b.audit.Audit(ctx, store.AuditEntry{At: now, Actor: "dlq-worker " + b.instanceID, Action: "breaker_" + s.String(),
		Route: b.route, Outcome: "ok", Reason: why}); err != nil {
		b.log.Error().Err(err).Str("state", s.String()).Msg("cannot write the breaker's audit row; the log line above is its record")
	}
}

// move moves the breaker to s: the gauge, a counter, the report for operators and a log
// line with the figures. An operator's override moves it without an audit row of the
// worker's: the operator's is written where the override is set.
func (b *breaker) move(now time.Time, s breakerState, why string, figures ...func(*zerolog.Event) *zerolog.Event) {
	from := b.stateName()
	b.state = s
	b.gauge.Set(float64(s))
	to := b.stateName()
	b.transits.WithLabelValues(b.route, to).Inc()
	b.report.Store(&store.BreakerReport{State: to, Since: now.UTC(), ReturnedRatio: b.returnedRatio(now), ReportedBy: b.instanceID})
	ev := b.log.Warn()
	if s == breakerClosed {
		ev = b.log.Info()
	}
	ev = ev.Str("from", from).Str("state", to).Str("why", why).Float64("ratio", b.cfg.Ratio).
		Dur("window_ms", b.cfg.Window).Dur("open_for_ms", b.cfg.OpenFor)
	for _, f := range figures {
		ev = f(ev)
	}
	ev.Msg("route breaker " + to)
}

// second is the window's bucket of now, the window trimmed to cfg.Window.
func (b *breaker) second(now time.Time) *breakerSecond {
	u := now.Unix()
	b.trim(now)
	if n := len(b.seconds); n == 0 || b.seconds[n-1].unix < u {
		b.seconds = append(b.seconds, breakerSecond{unix: u})
	}
	return &b.seconds[len(b.seconds)-1]
}

func (b *breaker) trim(now time.Time) {
	oldest := now.Add(-b.cfg.Window).Unix()
	i := 0
	for i < len(b.seconds) && b.seconds[i].unix < oldest {
		i++
	}
	b.seconds = b.seconds[i:]
}

// counts are the records the window redrove and those that came back. A record that
// came back and was redriven again counts once: what matters is how much of what the
// route sent out comes back, and a slow downstream returns the first pass of a backlog
// while the route sends the early returns again.
func (b *breaker) counts(now time.Time) (redriven, returned int64) {
	b.trim(now)
	for _, s := range b.seconds {
		redriven += s.redriven - s.again
		returned += s.returned
	}
	return redriven, returned
}
