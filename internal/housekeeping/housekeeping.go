// Package housekeeping is dlq-worker's maintenance loop: it deletes what the retention
// ages say nobody needs any more, and exports how many records are parked and scheduled
// right now, per route and reason, as gauges an alert can watch.
//
// Every worker counts the backlog (one grouped query per interval, bounded by a timeout);
// one worker at a time purges, the one holding a PostgreSQL advisory lock for the pass.
package housekeeping

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/dlqops/dlq/internal/lifecycle"
	"github.com/dlqops/dlq/internal/store"
)

// passTimeout bounds one pass's PostgreSQL work (the backlog count, the purge).
const passTimeout = 5 * time.Minute

// backlogTimeout bounds the backlog count, so a slow database skips an update instead of
// holding the loop.
const backlogTimeout = 10 * time.Second

// Store is what the housekeeper needs of the store (store.Housekeeping): one instance
// at a time, retention, and the backlog count.
type Store interface {
	WhileLeading(ctx context.Context, fn func(ctx context.Context) error) (bool, error)
	PurgeOld(ctx context.Context, r store.Retention, purged func(table string, rows int64)) error
	Backlog(ctx context.Context) ([]store.BacklogCount, error)
	MaxRecordID(ctx context.Context) (int64, error)
	BackfillFingerprints(ctx context.Context, after, until int64) (int64, error)
}

var _ Store = (*store.Housekeeping)(nil)

// Options are the housekeeper's dependencies.
type Options struct {
	Log       zerolog.Logger
	Store     Store
	Registry  prometheus.Registerer
	Retention store.Retention
	// Interval between passes; default 1 minute.
	Interval time.Duration
}

// Housekeeper runs the passes. It is a daemon.Component: Start runs the loop on a
// goroutine of its own, which owns everything but the metrics; Stop ends and waits for it.
type Housekeeper struct {
	log       zerolog.Logger
	store     Store
	retention store.Retention
	interval  time.Duration

	purged    *prometheus.CounterVec
	errs      *prometheus.CounterVec
	parked    *prometheus.GaugeVec
	scheduled *prometheus.GaugeVec
	shown     map[series]bool // the backlog series set by the last count

	backfilled prometheus.Counter // backfill.go
	backfill   fingerprintBackfill

	life lifecycle.Base // the loop's goroutine
}

// New builds a housekeeper and registers its metrics; nothing runs before Start.
func New(o Options) (*Housekeeper, error) {
	if o.Interval <= 0 {
		o.Interval = time.Minute
	}
	h := &Housekeeper{
		log: o.Log.With().Str("component", "housekeeping").Logger(), store: o.Store,
		retention: o.Retention, interval: o.Interval,
		purged: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "dlq_worker_purged_rows_total",
			Help: "Rows deleted by retention, by table."}, []string{"table"}),
		errs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "dlq_worker_housekeeping_errors_total",
			Help: "Housekeeping steps that failed (retried on the next pass), by step."}, []string{"step"}),
		parked: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "dlq_worker_parked_records",
			Help: "Records parked in PostgreSQL right now, by route and reason."}, []string{"route", "reason"}),
		scheduled: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "dlq_worker_scheduled_records",
			Help: "Records scheduled in PostgreSQL right now (waiting on their backoff), by route and reason."}, []string{"route", "reason"}),
		backfilled: prometheus.NewCounter(prometheus.CounterOpts{Name: "dlq_worker_fingerprints_backfilled_total",
			Help: "Records stored before fingerprints existed that housekeeping gave their fingerprint, so that incidents count them."}),
	}
	for _, c := range []prometheus.Collector{h.purged, h.errs, h.parked, h.scheduled, h.backfilled} {
		if err := o.Registry.Register(c); err != nil {
			return nil, err
		}
	}
	return h, nil
}

// Start runs a pass now and then every interval, until Stop. The loop outlives ctx (the
// binary's signal context): Stop ends it.
func (h *Housekeeper) Start(ctx context.Context) error {
	if _, err := h.life.Start(context.WithoutCancel(ctx)); err != nil {
		return fmt.Errorf("housekeeping: %w", err)
	}
	h.life.Go(h.loop)
	return nil
}

// Stop ends the loop and waits for it, at most until ctx ends. Safe before Start and twice.
func (h *Housekeeper) Stop(ctx context.Context) error {
	if err := h.life.Stop(ctx); err != nil {
		return fmt.Errorf("housekeeping: %w", err)
	}
	return nil
}

func (h *Housekeeper) loop(ctx context.Context) {
	t := time.NewTicker(h.interval)
	defer t.Stop()
	for {
		h.Pass(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Pass counts the backlog, then purges and backfills fingerprints if no other worker is
// doing so. Failures are
// counted and logged; the next pass tries again. It reports whether this worker purged.
// It runs on the loop's goroutine; tests call it instead of Start.
func (h *Housekeeper) Pass(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, passTimeout)
	defer cancel()
	h.countBacklog(ctx)
	led, err := h.store.WhileLeading(ctx, func(ctx context.Context) error {
		err := h.purge(ctx)
		h.backfillFingerprints(ctx)
		return err
	})
	if err != nil && ctx.Err() == nil {
		h.errs.WithLabelValues("purge").Inc()
		h.log.Warn().Err(err).Msg("purge failed; the next pass retries")
	}
	return led
}

func (h *Housekeeper) purge(ctx context.Context) error {
	start := time.Now()
	var total int64
	err := h.store.PurgeOld(ctx, h.retention, func(table string, rows int64) {
		h.purged.WithLabelValues(table).Add(float64(rows))
		total += rows
		h.log.Info().Str("table", table).Int64("rows", rows).Msg("purged rows past their retention age")
	})
	if total > 0 {
		h.log.Info().Int64("rows", total).Int64("elapsed_ms", time.Since(start).Milliseconds()).Msg("purge finished")
	}
	return err
}

// countBacklog sets the gauges from one grouped count. The series of a route and reason
// with no record left are deleted, so a drained backlog reads as absent, not as stale.
func (h *Housekeeper) countBacklog(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, backlogTimeout)
	defer cancel()
	counts, err := h.store.Backlog(ctx)
	if err != nil {
		if !errors.Is(ctx.Err(), context.Canceled) {
			h.errs.WithLabelValues("backlog").Inc()
			h.log.Warn().Err(err).Msg("cannot count the parked and scheduled records; the gauges keep their last values")
		}
		return
	}
	seen := make(map[series]bool, len(counts))
	for _, c := range counts {
		s := series{scheduled: c.Status == store.StatusScheduled, route: c.Route, reason: string(c.Reason)}
		h.gauge(s).WithLabelValues(s.route, s.reason).Set(float64(c.Count))
		seen[s] = true
	}
	for s := range h.shown {
		if !seen[s] {
			h.gauge(s).DeleteLabelValues(s.route, s.reason)
		}
	}
	h.shown = seen
}

// series is one backlog gauge series.
type series struct {
	scheduled     bool
	route, reason string
}

func (h *Housekeeper) gauge(s series) *prometheus.GaugeVec {
	if s.scheduled {
		return h.scheduled
	}
	return h.parked
}
