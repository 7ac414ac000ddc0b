package api

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Limits bound what callers may consume (config key limits). Zero values take the
// defaults.
type Limits struct {
	// RequestsPerSecond and Burst bound each token's request rate (429 beyond).
	RequestsPerSecond float64 `yaml:"requests_per_second"`
	Burst             int     `yaml:"burst"`
	// MaxConcurrent bounds each token's requests in progress at once (429 beyond), so that
	// one caller's expensive scans cannot hold the whole PostgreSQL pool.
	MaxConcurrent int `yaml:"max_concurrent"`
	// MaxConcurrentTotal bounds the requests of all callers in progress at once; it is
	// below the database pool's size, so that the pool always keeps connections for the
	// rest. A freed place goes to the waiting caller holding the fewest.
	MaxConcurrentTotal int `yaml:"max_concurrent_total"`
	// ConsoleMaxConcurrent bounds each token's console pages in progress at once, apart
	// from its API requests: an operator's browser tabs do not use up, nor get refused by,
	// the budget of the scripts that share the token.
	ConsoleMaxConcurrent int `yaml:"console_max_concurrent"`
	// MaxActiveJobs bounds each caller's pending and running jobs (429 beyond).
	MaxActiveJobs int `yaml:"max_active_jobs"`
	// UnauthenticatedAuditPerSecond bounds the audit rows written for requests without a
	// valid token (with a burst of ten), so that the audit log cannot be used to fill the
	// disk; the refusals beyond are counted in dlq_admin_unaudited_refusals_total.
	UnauthenticatedAuditPerSecond float64 `yaml:"unauthenticated_audit_per_second"`
}

// unauthenticatedAuditBurst is how many refusals of unauthenticated requests are audited at
// once before the rate applies.
const unauthenticatedAuditBurst = 10

// WithDefaults fills the zero limits.
func (l *Limits) WithDefaults() {
	if l.RequestsPerSecond == 0 {
		l.RequestsPerSecond = 20
	}
	if l.Burst == 0 {
		l.Burst = 40
	}
	if l.MaxConcurrent == 0 {
		l.MaxConcurrent = 4
	}
	if l.MaxConcurrentTotal == 0 {
		l.MaxConcurrentTotal = 8
	}
	if l.ConsoleMaxConcurrent == 0 {
		l.ConsoleMaxConcurrent = 16
	}
	if l.MaxActiveJobs == 0 {
		l.MaxActiveJobs = 10
	}
	if l.UnauthenticatedAuditPerSecond == 0 {
		l.UnauthenticatedAuditPerSecond = 1
	}
}

// Validate names the limits that are out of range.
func (l Limits) Validate() error {
	var errs []error
	for key, v := range map[string]float64{"requests_per_second": l.RequestsPerSecond,
		"unauthenticated_audit_per_second": l.UnauthenticatedAuditPerSecond} {
		if v <= 0 {
			errs = append(errs, fmt.Errorf("limits.%s: must be positive, got %g", key, v))
		}
	}
	for key, v := range map[string]int{"burst": l.Burst, "max_concurrent": l.MaxConcurrent,
		"max_concurrent_total": l.MaxConcurrentTotal, "console_max_concurrent": l.ConsoleMaxConcurrent,
		"max_active_jobs": l.MaxActiveJobs} {
		if v < 1 {
			errs = append(errs, fmt.Errorf("limits.%s: must be at least 1, got %d", key, v))
		}
	}
	return errors.Join(errs...)
}

// callerLimits hold each token's rate limiter and requests in progress. Keys are the
// configured token names, so the maps never grow beyond the configuration.
type callerLimits struct {
	limits Limits
	clock  func() time.Time

	mu       sync.Mutex
	rates    map[string]*rate.Limiter
	inFlight map[string]int
}

func newCallerLimits(l Limits, clock func() time.Time) *callerLimits {
	return &callerLimits{limits: l, clock: clock, rates: map[string]*rate.Limiter{}, inFlight: map[string]int{}}
}

// admit takes one request of caller, or returns a 429 whose Retry-After says when to come
// back. Console pages (console) are counted apart from the token's API requests, against
// limits.console_max_concurrent; the request rate is the token's, whoever sends. A nil
// release must not be called.
func (c *callerLimits) admit(caller string, console bool) (release func(), refused *Problem) {
	c.mu.Lock()
	defer c.mu.Unlock()
	lim := c.rates[caller]
	if lim == nil {
		lim = rate.NewLimiter(rate.Limit(c.limits.RequestsPerSecond), c.limits.Burst)
		c.rates[caller] = lim
	}
	slot, most, key := caller, c.limits.MaxConcurrent, "limits.max_concurrent"
	if console {
		slot, most, key = caller+"\x00console", c.limits.ConsoleMaxConcurrent, "limits.console_max_concurrent"
	}
	if c.inFlight[slot] >= most {
		return nil, tooMany(fmt.Sprintf("at most %d requests of a token at once (%s)", most, key), time.Second)
	}
	now := c.clock()
	r := lim.ReserveN(now, 1)
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now)
		return nil, tooMany(fmt.Sprintf("at most %g requests per second of a token (limits.requests_per_second)", c.limits.RequestsPerSecond), d)
	}
	c.inFlight[slot]++
	return func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.inFlight[slot]--
	}, nil
}

// gateWait bounds how long a request waits for a place under limits.max_concurrent_total
// before it is refused with a 429.
const gateWait = 30 * time.Second

// tooMany is a 429 that asks to retry after d, in whole seconds.
func tooMany(detail string, d time.Duration) *Problem {
	p := probTooMany.with(detail)
	p.RetryAfter = max(1, int(math.Ceil(d.Seconds())))
	return p
}
