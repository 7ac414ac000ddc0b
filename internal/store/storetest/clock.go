package storetest

import (
	"sync"
	"testing"
	"time"

	"github.com/dlqops/dlq/internal/store"
)

// Clock is a clock a test sets and moves forward, for a store (store.WithClock(c.Now))
// and the parts that share its time. It is safe for concurrent use.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// NewClock returns a clock reading start.
func NewClock(start time.Time) *Clock { return &Clock{now: start} }

// Now is the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// NewClocked is New on a Clock the test moves, which starts at 2026-03-01 12:00 UTC.
func NewClocked(t testing.TB, opts ...store.Option) (*store.Store, *Clock) {
	t.Helper()
	c := NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	return New(t, append(opts, store.WithClock(c.Now))...), c
}
