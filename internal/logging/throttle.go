package logging

import (
	"sync"
	"time"
)

// WarnInterval is the least time between two warnings of one kind: an outage gives one
// line per kind every 10 s, whatever the retry loop's pace.
const WarnInterval = 10 * time.Second

// Throttle lets through at most one log line of each kind per interval, so that an outage
// retried in a tight loop, or a DLQ full of alike records, gives a bounded log; it counts
// the lines it held back, for the next line to say. Safe for concurrent use.
type Throttle struct {
	interval time.Duration
	mu       sync.Mutex
	kinds    map[string]*throttled
}

type throttled struct {
	last time.Time
	held int
}

// NewThrottle returns a Throttle that lets one line of each kind through per interval.
func NewThrottle(interval time.Duration) *Throttle {
	return &Throttle{interval: interval, kinds: map[string]*throttled{}}
}

// Allow reports whether a line of kind may be logged now; if so it marks it logged and
// returns how many lines of kind it held back since the last one it let through.
func (t *Throttle) Allow(kind string) (notLogged int, ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	k := t.kinds[kind]
	if k == nil {
		k = &throttled{}
		t.kinds[kind] = k
	}
	now := time.Now()
	if !k.last.IsZero() && now.Sub(k.last) < t.interval {
		k.held++
		return 0, false
	}
	notLogged, k.last, k.held = k.held, now, 0
	return notLogged, true
}
