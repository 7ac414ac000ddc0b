// Package jobgauges exports the operator jobs' state from PostgreSQL at each scrape of
// dlq-worker's /metrics: how many jobs are pending and running, how long the oldest
// pending one has waited, and how long the most stalled running one has settled no
// record, so that an alert (DLQJobStuck) can tell a job that runs without progress.
//
// The numbers are the whole database's, not one worker's: every replica exports the same
// values (use max across replicas). There is no goroutine: Prometheus' scrape calls Collect.
package jobgauges

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/dlqops/dlq/internal/store"
)

// queryTimeout bounds the query of one scrape, below Prometheus' default 10 s scrape
// timeout, so a slow database costs these series and not the whole scrape.
const queryTimeout = 5 * time.Second

// logEvery limits the warning about a failed query while PostgreSQL stays down.
const logEvery = time.Minute

var (
	kinds    = []store.JobKind{store.JobReplay, store.JobDiscard}
	statuses = []store.JobStatus{store.JobPending, store.JobRunning}
)

// Store is what the gauges read (store.Jobs).
type Store interface {
	ActiveJobs(ctx context.Context) (store.ActiveJobs, error)
}

var _ Store = (*store.Jobs)(nil)

// Collector is a prometheus.Collector; Collect may run on several scrapes at once.
type Collector struct {
	store Store
	log   zerolog.Logger

	active, oldestPending, stalled *prometheus.Desc
	errors                         prometheus.Counter

	mu         sync.Mutex // guards lastLog
	lastLog    time.Time
	suppressed int
}

// Register builds the collector and registers it with reg.
func Register(reg prometheus.Registerer, st Store, log zerolog.Logger) (*Collector, error) {
	c := &Collector{
		store: st,
		log:   log.With().Str("component", "jobgauges").Logger(),
		active: prometheus.NewDesc("dlq_jobs_active",
			"Operator jobs pending (waiting for a runner) and running right now, by kind and status (whole database).",
			[]string{"kind", "status"}, nil),
		oldestPending: prometheus.NewDesc("dlq_jobs_oldest_pending_seconds",
			"How long the oldest pending job has waited for a runner; 0 when none waits (whole database).", nil, nil),
		stalled: prometheus.NewDesc("dlq_jobs_stalled_seconds",
			"The longest time a running job has settled no record (done, failed or skipped), heartbeats aside; 0 when none runs (whole database).", nil, nil),
		errors: prometheus.NewCounter(prometheus.CounterOpts{Name: "dlq_jobs_gauge_errors_total",
			Help: "Scrapes whose job gauges could not be read from PostgreSQL (the gauges are then left out)."}),
	}
	return c, reg.Register(c)
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.active
	ch <- c.oldestPending
	ch <- c.stalled
	c.errors.Describe(ch)
}

// Collect implements prometheus.Collector: one query, every kind and status exported
// (0 included, so the series exist before the first job). When the query fails the
// gauges are left out rather than reported as 0, and the error is counted.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), queryTimeout)
	defer cancel()
	now, err := c.store.ActiveJobs(ctx)
	if err != nil {
		c.errors.Inc()
		c.warn(err)
	} else {
		type series struct {
			kind   store.JobKind
			status store.JobStatus
		}
		seen := map[series]bool{}
		for _, n := range now.Counts {
			seen[series{n.Kind, n.Status}] = true
			ch <- prometheus.MustNewConstMetric(c.active, prometheus.GaugeValue, float64(n.Count), string(n.Kind), string(n.Status))
		}
		for _, k := range kinds {
			for _, s := range statuses {
				if !seen[series{k, s}] {
					ch <- prometheus.MustNewConstMetric(c.active, prometheus.GaugeValue, 0, string(k), string(s))
				}
			}
		}
		ch <- prometheus.MustNewConstMetric(c.oldestPending, prometheus.GaugeValue, now.OldestPending.Seconds())
		ch <- prometheus.MustNewConstMetric(c.stalled, prometheus.GaugeValue, now.LongestStall.Seconds())
	}
	c.errors.Collect(ch)
}

// warn logs a failed query at most once per logEvery, saying how many it did not log.
func (c *Collector) warn(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if time.Since(c.lastLog) < logEvery {
		c.suppressed++
		return
	}
	c.log.Warn().Err(err).Int("not_logged", c.suppressed).Msg("job gauges: PostgreSQL query failed; the gauges are left out of this scrape")
	c.lastLog, c.suppressed = time.Now(), 0
}
