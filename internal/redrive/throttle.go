// The throttle: how many records may start (the route's max_in_flight and rate_limit),
// and what the loop does while none may: first stop polling, then pause the reading
// partitions. Its fields (held, throttled, throttleAt, throttleP) are the loop's.

package redrive

import (
	"time"
)

// admit reports whether one more record may start now (in-flight bound, rate limit).
func (w *worker) admit() bool {
	if w.inFlight >= w.route.MaxInFlight {
		return false
	}
	return w.limiter == nil || w.limiter.Allow()
}

func (w *worker) processHeld() {
	if w.held == nil || !w.admit() {
		return
	}
	m := w.held
	w.held = nil
	p := w.parts[partKey{*m.TopicPartition.Topic, m.TopicPartition.Partition}]
	if p == nil || p.gone {
		return // revoked meanwhile: the new owner reads it
	}
	w.process(p, m)
}

// throttle stops taking records until in-flight work drains. At first the loop just stops
// polling: librdkafka's bounded read-ahead queue fills and holds the fetcher back, and it
// is still there when the loop takes records again. A Pause drops that queue, which has
// to be fetched again after Resume.
func (w *worker) throttle() {
	if w.throttled {
		return
	}
	w.throttled, w.throttleAt = true, time.Now()
}

// holdPolling reports whether the loop skips polling the consumer this turn. A throttle
// that outlasts throttleHold (PostgreSQL or the broker down) pauses the reading partitions
// and polls again, so rebalances are served and max.poll.interval.ms is never exceeded;
// librdkafka resumes each partition right after the last record it handed us.
func (w *worker) holdPolling() bool {
	if !w.throttled || w.throttleP {
		return false
	}
	if time.Since(w.throttleAt) < throttleHold {
		return true
	}
	w.throttleP = true
	w.setPaused(w.readingParts(), true)
	return false
}

func (w *worker) unthrottle() {
	if !w.throttled || w.held != nil {
		return
	}
	if w.throttleP {
		if w.inFlight > w.route.MaxInFlight/2 {
			return // half drained first, so a slow store does not pause and resume per record
		}
		w.setPaused(w.readingParts(), false)
	}
	w.throttled, w.throttleP = false, false
}
