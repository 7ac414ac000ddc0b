// Operator controls: pause, resume, run now and the breaker's override per route, polled
// from PostgreSQL on the engine's controls goroutine, which only touches the workers'
// atomics and run requests, and publishes the breakers' states for operators.

package redrive

import (
	"context"
	"time"

	"github.com/rs/zerolog"

	"github.com/dlqops/dlq/internal/store"
)

// controls polls the operator controls: pause, resume and run-now per route, and keeps
// the routes registered, with their next scheduled run, for the admin API.
func (e *Engine) controls(ctx context.Context) {
	names := make([]string, len(e.workers))
	for i, w := range e.workers {
		names[i] = w.route.Name
	}
	registered := false
	seen := map[string]time.Time{}
	published := make([]time.Time, len(e.workers))
	reported := make([]*store.BreakerReport, len(e.workers))
	t := time.NewTicker(e.poll)
	defer t.Stop()
	for {
		cctx, cancel := context.WithTimeout(ctx, callTimeout)
		if !registered {
			if err := e.store.RegisterRoutes(cctx, names, "dlq-worker/"+e.instanceID); err == nil {
				registered = true
			} else if ctx.Err() == nil {
				e.log.Warn().Err(err).Msg("cannot register routes in PostgreSQL; retrying")
			}
		}
		rcs, err := e.store.RouteControls(cctx)
		cancel()
		if err == nil {
			e.applyControls(ctx, rcs, seen)
		}
		if registered {
			e.publishNextRuns(ctx, published)
			e.publishBreakers(ctx, reported)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (e *Engine) applyControls(ctx context.Context, rcs []store.RouteControl, seen map[string]time.Time) {
	byName := map[string]store.RouteControl{}
	for _, rc := range rcs {
		byName[rc.Route] = rc
	}
	for _, w := range e.workers {
		rc := byName[w.route.Name]
		w.breaker.override(rc.BreakerOverride, rc.UpdatedBy)
		if w.requests.paused.Swap(rc.Paused) != rc.Paused {
			w.log.Info().Bool("paused", rc.Paused).Str("by", rc.UpdatedBy).Msg("operator control changed")
		}
		if rc.RunRequestedAt.IsZero() || rc.RunRequestedAt.Equal(seen[w.route.Name]) || rc.Paused {
			continue
		}
		if w.requests.running.Load() {
			continue // picked up on a poll after the run in progress
		}
		cctx, cancel := context.WithTimeout(ctx, callTimeout)
		err := e.store.AckRunRequest(cctx, w.route.Name, rc.RunRequestedAt)
		cancel()
		if err != nil {
			continue // try again on the next poll
		}
		seen[w.route.Name] = rc.RunRequestedAt
		e.life.Go(func(ctx context.Context) { w.requests.trigger(ctx, "operator") })
	}
}

// loadBreakerOverrides hands each breaker its operator's override before the routes'
// loops start, so that a breaker forced open stays open across a restart; when PostgreSQL
// does not answer, the first poll does it.
func (e *Engine) loadBreakerOverrides(ctx context.Context) {
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	rcs, err := e.store.RouteControls(cctx)
	if err != nil {
		e.log.Warn().Err(err).Msg("cannot read the breakers' overrides from PostgreSQL; the first control poll applies them")
		return
	}
	for _, rc := range rcs {
		for _, w := range e.workers {
			if w.route.Name == rc.Route {
				w.breaker.override(rc.BreakerOverride, rc.UpdatedBy)
			}
		}
	}
}

// publishBreakers reports each breaker's state that changed since the last report.
func (e *Engine) publishBreakers(ctx context.Context, reported []*store.BreakerReport) {
	for i, w := range e.workers {
		r := w.breaker.report.Load()
		if r == reported[i] {
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, callTimeout)
		err := e.store.ReportBreaker(cctx, w.route.Name, *r)
		cancel()
		if err == nil {
			reported[i] = r
		}
	}
}

// cronLogger adapts zerolog to cron's logger.
type cronLogger struct{ log zerolog.Logger }

func (l cronLogger) Info(msg string, kv ...any) { l.log.Debug().Fields(kv).Msg("cron: " + msg) }

func (l cronLogger) Error(err error, msg string, kv ...any) {
	l.log.Error().Err(err).Fields(kv).Msg("cron: " + msg)
}
