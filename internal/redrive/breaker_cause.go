// The breaker of one cause: when most of what comes back to a route shares one
// fingerprint (one error class and message template from one original topic), the
// route's breaker opens that cause's breaker instead of its own. The records of that
// cause wait as scheduled, retry counts untouched; the records of other causes keep
// flowing, which tells a poison cause from an outage: when the route sends little else (a
// sample of its first redrives, by cause), its own breaker opens. It probes and closes as
// the route's does. A route holds at most maxCauseBreakers of them; past that, its own
// breaker opens. The metric names a cause by its fingerprint, never by the sender's
// message. Everything here runs on the loop goroutine.

package redrive

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/dlqops/dlq/internal/fingerprint"
	"github.com/dlqops/dlq/internal/headers"
	"github.com/dlqops/dlq/internal/routes"
	"github.com/dlqops/dlq/internal/store"
)

const (
	// maxCauseBreakers bounds the causes a route holds apart, and so the series of
	// dlq_worker_cause_breaker_state per route.
	maxCauseBreakers = 8
	// maxCausesPerSecond bounds the causes a second of the window tells apart; the
	// returns of more causes count for the route only.
	maxCausesPerSecond = 16
	// causeSampleEvery: one first redrive in this many has its cause computed, to know
	// what else the route sends.
	causeSampleEvery = 8
)

// causeOf is a record's cause as the store fingerprints it (store.insertRow).
func causeOf(errorClass, errorMessage, originalTopic string) string {
	return fingerprint.Of(errorClass, fingerprint.Template(errorMessage), originalTopic)
}

// probeThreshold is how many of a breaker's probes coming back open it again.
func probeThreshold(cfg routes.Breaker) int {
	return max(1, int(math.Ceil(cfg.Ratio*float64(cfg.Probes))))
}

// causeBreaker is one cause's breaker: open, or half-open while its probes are out.
type causeBreaker struct {
	cause   string
	state   breakerState
	until   time.Time
	probes  map[headers.Coordinates]bool
	pending map[headers.Coordinates]bool
	back    int
	left    int
	acked   time.Time
}

// causeBreakers are the causes a route holds apart.
type causeBreakers struct {
	cfg        routes.Breaker
	route      string
	instanceID string
	log        zerolog.Logger
	audit      breakerAudit
	gauge      *prometheus.GaugeVec // dlq_worker_cause_breaker_state{route,fingerprint}
	held       prometheus.Counter   // the route's dlq_worker_route_breaker_held_total
	byCause    map[string]*causeBreaker
}

// of is the breaker of cause when it is held apart, else nil.
func (cs *causeBreakers) of(cause string) *causeBreaker {
	if cause == "" {
		return nil
	}
	return cs.byCause[cause]
}

// open opens cause's breaker, adding it if new.
func (cs *causeBreakers) open(cause string, now time.Time, why string) {
	cb := cs.byCause[cause]
	if cb == nil {
		cb = &causeBreaker{cause: cause}
		cs.byCause[cause] = cb
	}
	cb.state, cb.until, cb.probes, cb.pending = breakerOpen, now.Add(cs.cfg.OpenFor), nil, nil
	cs.transit(cb, now, why)
}

// allow is the breaker's allow for a record of a held cause.
func (cs *causeBreakers) allow(cb *causeBreaker, from headers.Coordinates, now time.Time) bool {
	if cb.state == breakerOpen && !now.Before(cb.until) {
		cb.state, cb.probes, cb.pending, cb.back, cb.left, cb.acked = breakerHalfOpen, map[headers.Coordinates]bool{},
			map[headers.Coordinates]bool{}, 0, cs.cfg.Probes, time.Time{}
		cs.transit(cb, now, "open_for elapsed: probing")
	}
	if cb.state == breakerHalfOpen && cb.left > 0 {
		cb.left--
		cb.probes[from], cb.pending[from] = true, true
		return true
	}
	return false
}

// returned counts a return of a held cause: a probe coming back may open it again.
func (cs *causeBreakers) returned(cb *causeBreaker, prev headers.Coordinates, now time.Time) {
	if cb.state != breakerHalfOpen || !cb.probes[prev] {
		return
	}
	cb.back++
	if cb.back >= probeThreshold(cs.cfg) {
		cs.open(cb.cause, now, fmt.Sprintf("%d of %d probes came back", cb.back, len(cb.probes)))
	}
}

// acked and settled follow the acknowledgements of the causes' probes.
func (cs *causeBreakers) acked(from headers.Coordinates, now time.Time) {
	for _, cb := range cs.byCause {
		if cb.pending[from] {
			delete(cb.pending, from)
			cb.acked = now
		}
	}
}

func (cs *causeBreakers) settled(from headers.Coordinates) {
	for _, cb := range cs.byCause {
		delete(cb.pending, from)
	}
}

// endDLQPhase closes each half-open cause whose probes did not come back by the end of
// the DLQ phase of a run that started (runStart) after they were all acknowledged.
func (cs *causeBreakers) endDLQPhase(runStart, now time.Time) {
	for cause, cb := range cs.byCause {
		if cb.state != breakerHalfOpen || len(cb.probes) == 0 || len(cb.pending) > 0 || !runStart.After(cb.acked) {
			continue
		}
		delete(cs.byCause, cause)
		cb.state = breakerClosed
		cs.transit(cb, now, fmt.Sprintf("%d of %d probes came back", cb.back, len(cb.probes)))
	}
}

// holdUntil is the due time of a record its cause's breaker holds.
func (cs *causeBreakers) holdUntil(cb *causeBreaker, now time.Time) time.Time {
	cs.held.Inc()
	if cb.until.After(now) {
		return cb.until
	}
	return now
}

// transit says a cause breaker's move: the gauge (its series deleted on close), a log
// line and, for an open or a close, an audit row naming the cause by fingerprint.
func (cs *causeBreakers) transit(cb *causeBreaker, now time.Time, why string) {
	ev := cs.log.Warn()
	if cb.state == breakerClosed {
		cs.gauge.DeleteLabelValues(cs.route, cb.cause)
		ev = cs.log.Info()
	} else {
		cs.gauge.WithLabelValues(cs.route, cb.cause).Set(float64(cb.state))
	}
	ev.Str("fingerprint", cb.cause).Str("state", cb.state.String()).Str("why", why).Int("cause_breakers", len(cs.byCause)).
		Msg("cause breaker " + cb.state.String())
	if cb.state == breakerHalfOpen {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	if err := cs.audit.Audit(ctx, store.AuditEntry{At: now, Actor: "dlq-worker " + cs.instanceID, Action: "cause_breaker_" + cb.state.String(),
		Route: cs.route, Outcome: "ok", Reason: "fingerprint " + cb.cause + ": " + why}); err != nil {
		cs.log.Error().Err(err).Str("fingerprint", cb.cause).Msg("cannot write the cause breaker's audit row; the log line above is its record")
	}
}

// holdsCauses reports whether some cause is held apart: only then do the loop and the
// claims compute a record's cause for allow.
func (b *breaker) holdsCauses() bool { return len(b.causes.byCause) > 0 }

// sampleCause reports whether this first redrive's cause is sampled (sent).
func (b *breaker) sampleCause() bool {
	b.sampleTick++
	return b.sampleTick%causeSampleEvery == 0
}

// sent counts a sampled first redrive of cause.
func (b *breaker) sent(cause string, now time.Time) {
	s := b.second(now)
	s.sampled++
	countIn(&s.sentByCause, cause)
}

// holdApart opens the breaker of the window's dominant cause, if there is one and room
// for it, and takes its returns out of the route's window, so the route's own breaker
// judges the other causes only. It reports whether it did.
func (b *breaker) holdApart(now time.Time, redriven int64) bool {
	cause, n, total := b.dominantCause(now)
	if cause == "" || len(b.causes.byCause) >= maxCauseBreakers {
		return false
	}
	for i := range b.seconds {
		b.seconds[i].returned -= b.seconds[i].byCause[cause]
		delete(b.seconds[i].byCause, cause)
	}
	b.causes.open(cause, now, fmt.Sprintf("%d of the %d records that came back within %s share this cause; %d were redriven",
		n, total, b.cfg.Window, redriven))
	return true
}

// dominantCause is the cause of at least cfg.CauseShare of the returns in the window
// while other causes make up more than the rest of what the route sends (sampled), if
// any: a route that sends almost only that cause has an outage, not a poison cause.
func (b *breaker) dominantCause(now time.Time) (string, int64, int64) {
	b.trim(now)
	returned, sent := map[string]int64{}, map[string]int64{}
	var total, sampled int64
	for _, s := range b.seconds {
		total, sampled = total+s.returned, sampled+s.sampled
		for c, n := range s.byCause {
			returned[c] += n
		}
		for c, n := range s.sentByCause {
			sent[c] += n
		}
	}
	for c, n := range returned {
		if c != "" && float64(n) >= b.cfg.CauseShare*float64(total) &&
			sampled > 0 && float64(sent[c]) < b.cfg.CauseShare*float64(sampled) {
			return c, n, total
		}
	}
	return "", 0, total
}
