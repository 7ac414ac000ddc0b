package housekeeping

import (
	"errors"
	"fmt"
	"time"
)

// Retention is how long dlq-worker keeps rows nobody needs any more (`retention:`), and how
// often its housekeeping looks. Ages take days and years (90d, 2y) as every duration of
// the configuration does.
type Retention struct {
	// Records: redriven, replayed and discarded dead-letter rows, after their last change
	// (parked and scheduled ones are never deleted).
	Records time.Duration `yaml:"records"`
	// Runs: redrive runs and their ledger; the newest ledger row of each DLQ partition stays.
	Runs time.Duration `yaml:"runs"`
	// IdleRuns: runs that read nothing (a route's consecutive idle runs share one row).
	IdleRuns time.Duration `yaml:"idle_runs"`
	// Jobs: finished operator jobs.
	Jobs time.Duration `yaml:"jobs"`
	// Audit: audit log rows.
	Audit time.Duration `yaml:"audit"`
	// Ledger: ledger gaps, and the ledger positions of partitions no worker has held; at
	// least 48h, as workers mark the positions they hold once a day.
	Ledger time.Duration `yaml:"ledger"`
	// Interval is the time between housekeeping passes, which also update the backlog
	// gauges. Every age must be at least 1m.
	Interval time.Duration `yaml:"interval"`
}

// Retention defaults.
const (
	DefaultRetainRecords  = 30 * 24 * time.Hour
	DefaultRetainRuns     = 90 * 24 * time.Hour
	DefaultRetainIdleRuns = 24 * time.Hour
	DefaultRetainJobs     = 90 * 24 * time.Hour
	DefaultRetainAudit    = 365 * 24 * time.Hour
	DefaultRetainLedger   = 365 * 24 * time.Hour
	DefaultHousekeeping   = time.Minute
)

// WithDefaults fills unset ages.
func (r *Retention) WithDefaults() {
	for _, f := range []struct {
		d   *time.Duration
		def time.Duration
	}{{&r.Records, DefaultRetainRecords}, {&r.Runs, DefaultRetainRuns}, {&r.IdleRuns, DefaultRetainIdleRuns},
		{&r.Jobs, DefaultRetainJobs}, {&r.Audit, DefaultRetainAudit}, {&r.Ledger, DefaultRetainLedger}, {&r.Interval, DefaultHousekeeping}} {
		if *f.d == 0 {
			*f.d = f.def
		}
	}
}

// Validate names the first bad key.
func (r *Retention) Validate() error {
	var errs []error
	for _, f := range []struct {
		key string
		d   time.Duration
		min time.Duration
	}{{"records", r.Records, time.Minute}, {"runs", r.Runs, time.Minute}, {"idle_runs", r.IdleRuns, time.Minute},
		{"jobs", r.Jobs, time.Minute}, {"audit", r.Audit, time.Minute}, {"ledger", r.Ledger, 48 * time.Hour}, {"interval", r.Interval, time.Second}} {
		if f.d < f.min {
			errs = append(errs, fmt.Errorf("retention.%s: must be at least %s, got %s", f.key, f.min, f.d))
		}
	}
	return errors.Join(errs...)
}
