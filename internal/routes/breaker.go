package routes

import (
	"time"
)

// Breaker stops a route's redrives while its downstream is down: when most of what the
// route redrove within the window comes back to the DLQ (a returning record carries the
// previous hop's dlq-redrive-id), the breaker opens and the route's records wait in
// PostgreSQL as scheduled, their retry counts untouched. After open_for it lets probes
// through; it closes when they stop coming back.
type Breaker struct {
	// Disabled turns the breaker off: the route redrives whatever comes back.
	Disabled bool `yaml:"disabled"`
	// Ratio opens the breaker when the records that came back within the window reach
	// this fraction of the records the route redrove in it (a record sent again after it
	// came back counts once).
	Ratio float64 `yaml:"ratio"`
	// MinReturned is how many records must have come back within the window before the
	// breaker may open, so that a few failures never stop a route.
	MinReturned int `yaml:"min_returned"`
	// Window is how far back redrives and returns are counted.
	Window time.Duration `yaml:"window"`
	// OpenFor is how long the breaker stays open before it lets probes through.
	OpenFor time.Duration `yaml:"open_for"`
	// Probes is how many records the half-open breaker redrives each open_for; if fewer
	// than ratio of them come back by the end of a run that started after they were
	// acknowledged, it closes.
	Probes int `yaml:"probes"`
	// CauseShare opens the breaker of one cause (fingerprint) instead of the route's when
	// at least this fraction of what came back shares that cause while less than this
	// fraction of what the route sends is of it: that cause's records wait, the records of
	// other causes keep flowing. Above 0.5, at most 1.
	CauseShare float64 `yaml:"cause_share"`
}

// Breaker defaults: the breaker is on unless a route disables it.
const (
	DefaultBreakerRatio       = 0.5
	DefaultBreakerMinReturned = 100
	DefaultBreakerWindow      = 5 * time.Minute
	DefaultBreakerOpenFor     = time.Minute
	DefaultBreakerProbes      = 10
	DefaultBreakerCauseShare  = 0.8
)

func (b *Breaker) withDefaults() {
	if b.Ratio == 0 {
		b.Ratio = DefaultBreakerRatio
	}
	if b.MinReturned == 0 {
		b.MinReturned = DefaultBreakerMinReturned
	}
	if b.Window == 0 {
		b.Window = DefaultBreakerWindow
	}
	if b.OpenFor == 0 {
		b.OpenFor = DefaultBreakerOpenFor
	}
	if b.Probes == 0 {
		b.Probes = DefaultBreakerProbes
	}
	if b.CauseShare == 0 {
		b.CauseShare = DefaultBreakerCauseShare
	}
}

func (b *Breaker) validate(at func(key, format string, args ...any) error) []error {
	var errs []error
	if b.Ratio <= 0 || b.Ratio > 1 {
		errs = append(errs, at("breaker.ratio", "must be in (0, 1], got %v", b.Ratio))
	}
	if b.MinReturned < 1 {
		errs = append(errs, at("breaker.min_returned", "must be at least 1, got %d", b.MinReturned))
	}
	if b.Window < time.Second {
		errs = append(errs, at("breaker.window", "must be at least 1s, got %s", b.Window))
	}
	if b.OpenFor < time.Second {
		errs = append(errs, at("breaker.open_for", "must be at least 1s, got %s", b.OpenFor))
	}
	if b.Probes < 1 {
		errs = append(errs, at("breaker.probes", "must be at least 1, got %d", b.Probes))
	}
	if b.CauseShare <= 0.5 || b.CauseShare > 1 {
		errs = append(errs, at("breaker.cause_share", "must be in (0.5, 1], got %v", b.CauseShare))
	}
	return errs
}
