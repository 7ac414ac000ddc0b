// Operator controls: pause, resume and run now per route, polled from PostgreSQL on the
// engine's controls goroutine, which only touches the workers' atomics and run requests.

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

// cronLogger adapts zerolog to cron's logger.
type cronLogger struct{ log zerolog.Logger }

func (l cronLogger) Info(msg string, kv ...any) { l.log.Debug().Fields(kv).Msg("cron: " + msg) }

func (l cronLogger) Error(err error, msg string, kv ...any) {
	l.log.Error().Err(err).Fields(kv).Msg("cron: " + msg)
}
