// Package backoff is the per-route retry delay: a pure function of the attempt number and
// a jitter draw, so that it is table-tested and a record's due time is reproducible.
package backoff

import (
	"fmt"
	"math"
	"time"
)

// Policy is an exponential, capped, jittered backoff. The zero Policy is "none": every
// record is due at once and the route's cron interval is the only delay.
type Policy struct {
	Base   time.Duration
	Factor float64
	Cap    time.Duration
	// Jitter spreads each delay uniformly over ±Jitter of itself (0 ≤ Jitter ≤ 1), so that a
	// burst of failures does not come due in one burst again.
	Jitter float64
}

// None reports whether the policy never delays.
func (p Policy) None() bool { return p.Base == 0 }

// Validate reports the first invalid field, named as in the configuration.
func (p Policy) Validate() error {
	if p.None() {
		return nil
	}
	switch {
	case p.Base < 0:
		return fmt.Errorf("base: must be positive, got %s", p.Base)
	case p.Factor < 1 || math.IsInf(p.Factor, 0) || math.IsNaN(p.Factor):
		return fmt.Errorf("factor: must be at least 1, got %v", p.Factor)
	case p.Cap < p.Base:
		return fmt.Errorf("cap: must be at least base (%s), got %s", p.Base, p.Cap)
	case p.Jitter < 0 || p.Jitter > 1 || math.IsNaN(p.Jitter):
		return fmt.Errorf("jitter: must be within [0, 1], got %v", p.Jitter)
	}
	return nil
}

// Delay is the wait before attempt number retryCount+1 of a record that failed retryCount
// times: min(Cap, Base·Factor^retryCount), then jittered with u, a uniform draw in [0, 1)
// (u = 0.5 means no jitter), and capped again.
func (p Policy) Delay(retryCount int, u float64) time.Duration {
	if p.None() || retryCount < 0 {
		return 0
	}
	d := float64(p.Base) * math.Pow(p.Factor, float64(retryCount))
	d = math.Min(d, float64(p.Cap))
	d *= 1 + p.Jitter*(2*u-1)
	return time.Duration(math.Min(d, float64(p.Cap)))
}

// Due is when a record that last failed at lastFailure after retryCount attempts may be
// redriven.
func (p Policy) Due(lastFailure time.Time, retryCount int, u float64) time.Time {
	return lastFailure.Add(p.Delay(retryCount, u))
}
