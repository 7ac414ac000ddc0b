// The throttle: how many records may start (the route's max_in_flight and rate_limit,
// and each partition's window past the ledger), and what the loop does while none may:
// first stop polling, then pause the reading partitions.

package redrive

import (
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"golang.org/x/time/rate"
)

// throttle is owned by the loop goroutine. The in-flight count it bounds is the loop's
// (worker.inFlight), passed in.
type throttle struct {
	maxInFlight int
	limiter     *rate.Limiter // nil when unlimited
	parts       *partitions   // a long throttle pauses the reading ones

	held   *kafka.Message // the record that found no room; it is processed first
	on     bool           // not taking records until in-flight work drains
	at     time.Time      // when the throttle began
	paused bool           // the throttle outlasted throttleHold and paused the reading partitions
	// barrier: an exactly_once route's transaction is closing (txn.go); no record starts
	// until it committed.
	barrier bool
}

func newThrottle(maxInFlight int, rateLimit float64, parts *partitions) *throttle {
	t := &throttle{maxInFlight: maxInFlight, parts: parts}
	if rateLimit > 0 {
		t.limiter = rate.NewLimiter(rate.Limit(rateLimit), max(1, int(rateLimit)))
	}
	return t
}

// admit reports whether the record at off of p may start now: the in-flight bound, p's
// window past the ledger (none when p is nil: a claimed row, or a revoked partition's
// record, which is dropped), the rate limit.
func (t *throttle) admit(p *partition, off int64, inFlight int) bool {
	if t.barrier || inFlight >= t.maxInFlight || p != nil && !p.inWindow(off) {
		return false
	}
	return t.limiter == nil || t.limiter.Allow()
}

// The window past the ledger (a slow start). A partition takes records at most window
// offsets past the ledger's position: a crash sends again at most that many of them,
// since the next life resumes at the ledger's position. A newly assigned partition starts
// at windowStart and each ledger write that lands for it doubles the window, up to the
// route's max_in_flight: a life killed early costs a few hundred records, and a life that
// runs reaches full speed after a few writes.
const windowStart = 256

// inWindow reports whether p may take the record at off now.
func (p *partition) inWindow(off int64) bool {
	if p.ledgered < 0 {
		return true // the ledger's position is unknown (PostgreSQL did not answer at the assignment)
	}
	base := max(p.ledgered, p.stored) // stored: where it started, when that is past the ledger
	if off < base+p.window {
		return true
	}
	// Every record it took is acknowledged or stored, and in the ledger: the offsets in
	// between are a gap (compaction, transaction markers) that must not hold it forever.
	return p.trk.Open() == 0 && p.trk.Watermark() <= base
}

// hold keeps m, which admit refused, and stops taking records until in-flight work
// drains. At first the loop just stops polling: librdkafka's bounded read-ahead queue
// fills and holds the fetcher back, and it is still there when the loop takes records
// again. A Pause drops that queue, which has to be fetched again after Resume.
func (t *throttle) hold(m *kafka.Message) {
	t.held = m
	if !t.on {
		t.on, t.at = true, time.Now()
	}
}

// takeHeld returns the held record once it may start, and forgets it.
func (t *throttle) takeHeld(inFlight int) *kafka.Message {
	if t.held == nil || !t.admit(t.parts.of(t.held.TopicPartition), int64(t.held.TopicPartition.Offset), inFlight) {
		return nil
	}
	m := t.held
	t.held = nil
	return m
}

// forget drops the held record when its partition is revoked: the new owner reads it.
func (t *throttle) forget(revoked []*partition) {
	for _, p := range revoked {
		if t.held != nil && *t.held.TopicPartition.Topic == p.key.topic && t.held.TopicPartition.Partition == p.key.partition {
			t.held = nil
		}
	}
}

// holdPolling reports whether the loop skips polling the consumer this turn. A throttle
// that outlasts throttleHold (PostgreSQL or the broker down) pauses the reading partitions
// and polls again, so rebalances are served and max.poll.interval.ms is never exceeded;
// librdkafka resumes each partition right after the last record it handed us.
func (t *throttle) holdPolling() bool {
	if !t.on || t.paused {
		return false
	}
	if time.Since(t.at) < throttleHold {
		return true
	}
	t.paused = true
	t.parts.setPaused(t.parts.reading(), true)
	return false
}

// release lifts the throttle once in-flight work drained (half of it after a pause, so
// that a slow store does not pause and resume per record).
func (t *throttle) release(inFlight int) {
	if !t.on || t.held != nil {
		return
	}
	if t.paused {
		if inFlight > t.maxInFlight/2 {
			return
		}
		t.parts.setPaused(t.parts.reading(), false)
	}
	t.on, t.paused = false, false
}
