// The breaker of one cause: when most of what comes back to a route shares one
// fingerprint (one error class and message template from one original topic), the
// route's breaker opens that cause's breaker instead of its own. The records of that
// cause wait as scheduled, retry counts untouched; the records of other causes keep
// flowing, which tells a poison cause from an outage: when the route sends little else (a
// sample of its first redrives, by cause), its own breaker opens. It probes and closes as
// the route's does. A route holds at most
// maxCauseBreakers of them; past that, its own breaker opens. The metric names a cause by
// its fingerprint, never by the sender's message. Everything here runs on the loop goroutine.

package redrive

import (
	"context"
	"fmt"
	"time"

	"github.com/dlqops/dlq/internal/fingerprint"
	"github.com/dlqops/dlq/internal/headers"
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

// holdsCauses reports whether some cause is held apart: only then do the loop and the
// claims compute a record's cause for allow.
func (b *breaker) holdsCauses() bool { return len(b.causes) > 0 }

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

// openCause holds cause apart: its returns leave the route's window, so the route's own
// breaker judges the other causes only.
func (b *breaker) openCause(cause string, now time.Time, why string) {
	cb := b.causes[cause]
	if cb == nil {
		cb = &causeBreaker{cause: cause}
		b.causes[cause] = cb
		for i := range b.seconds {
			b.seconds[i].returned -= b.seconds[i].byCause[cause]
			delete(b.seconds[i].byCause, cause)
		}
	}
	cb.state, cb.until, cb.probes, cb.pending = breakerOpen, now.Add(b.cfg.OpenFor), nil, nil
	b.causeTransit(cb, now, why)
}

// causeAllow is allow for a record of a held cause.
func (b *breaker) causeAllow(cb *causeBreaker, from headers.Coordinates, now time.Time) bool {
	if cb.state == breakerOpen && !now.Before(cb.until) {
		cb.state, cb.probes, cb.pending, cb.back, cb.left, cb.acked = breakerHalfOpen, map[headers.Coordinates]bool{},
			map[headers.Coordinates]bool{}, 0, b.cfg.Probes, time.Time{}
		b.causeTransit(cb, now, "open_for elapsed: probing")
	}
	if cb.state == breakerHalfOpen && cb.left > 0 {
		cb.left--
		cb.probes[from], cb.pending[from] = true, true
		return true
	}
	return false
}

// causeReturned counts a return of a held cause: a probe coming back may open it again.
func (b *breaker) causeReturned(cb *causeBreaker, prev headers.Coordinates, now time.Time) {
	if cb.state != breakerHalfOpen || !cb.probes[prev] {
		return
	}
	cb.back++
	if cb.back >= b.probeThreshold() {
		b.openCause(cb.cause, now, fmt.Sprintf("%d of %d probes came back", cb.back, len(cb.probes)))
	}
}

// causesAcked and causesSettled follow the acknowledgements of the causes' probes.
func (b *breaker) causesAcked(from headers.Coordinates, now time.Time) {
	for _, cb := range b.causes {
		if cb.pending[from] {
			delete(cb.pending, from)
			cb.acked = now
		}
	}
}

func (b *breaker) causesSettled(from headers.Coordinates) {
	for _, cb := range b.causes {
		delete(cb.pending, from)
	}
}

// causesEndDLQPhase closes each half-open cause whose probes did not come back, as
// endDLQPhase does for the route.
func (b *breaker) causesEndDLQPhase(now time.Time) {
	for cause, cb := range b.causes {
		if cb.state != breakerHalfOpen || len(cb.probes) == 0 || len(cb.pending) > 0 || !b.runStart.After(cb.acked) {
			continue
		}
		delete(b.causes, cause)
		cb.state = breakerClosed
		b.causeTransit(cb, now, fmt.Sprintf("%d of %d probes came back", cb.back, len(cb.probes)))
	}
}

// causeHoldUntil is the due time of a record its cause's breaker holds.
func (b *breaker) causeHoldUntil(cb *causeBreaker, now time.Time) time.Time {
	b.held.Inc()
	if cb.until.After(now) {
		return cb.until
	}
	return now
}

// causeTransit says a cause breaker's move: the gauge (its series deleted on close), a
// log line and, for an open or a close, an audit row naming the cause by fingerprint.
func (b *breaker) causeTransit(cb *causeBreaker, now time.Time, why string) {
	if cb.state == breakerClosed {
		b.causeGauge.DeleteLabelValues(b.route, cb.cause)
	} else {
		b.causeGauge.WithLabelValues(b.route, cb.cause).Set(float64(cb.state))
	}
	ev := b.log.Warn()
	if cb.state == breakerClosed {
		ev = b.log.Info()
	}
	ev.Str("fingerprint", cb.cause).Str("state", cb.state.String()).Str("why", why).Int("cause_breakers", len(b.causes)).
		Msg("cause breaker " + cb.state.String())
	if cb.state == breakerHalfOpen {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	if err := b.audit.Audit(ctx, store.AuditEntry{At: now, Actor: "dlq-worker " + b.instanceID, Action: "cause_breaker_" + cb.state.String(),
		Route: b.route, Outcome: "ok", Reason: "fingerprint " + cb.cause + ": " + why}); err != nil {
		b.log.Error().Err(err).Str("fingerprint", cb.cause).Msg("cannot write the cause breaker's audit row; the log line above is its record")
	}
}
