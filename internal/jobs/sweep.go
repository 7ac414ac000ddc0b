package jobs

import (
	"context"
	"time"

	"github.com/dlqops/dlq/internal/store"
)

// sweep returns to where they were, every half lease, the records a job left replaying
// when it ended while their holder was away (a cancel while the runner was stopped or
// dead): a running job's own leases are resumed by its next holder instead. It also folds
// the outcomes of ended jobs that their holders did not fold (see fold). Until it
// succeeds once, it also publishes the routes' allowed_targets for dlq-admin. It runs
// until ctx ends.
func (r *Runner) sweep(ctx context.Context) {
	t := time.NewTicker(r.cfg.Lease / 2)
	defer t.Stop()
	published := false
	for {
		if !published {
			published = r.publishTargets(ctx)
		}
		n, err := r.cfg.Store.ReturnExpiredReplays(ctx, store.Actor{Name: r.cfg.Owner})
		switch {
		case err != nil && ctx.Err() == nil:
			r.log.Warn().Err(err).Msg("return expired replay leases")
		case n > 0:
			r.log.Info().Int("records", n).Msg("returned records left replaying by an ended job to where they were")
		}
		r.fold(ctx, 0) // what the holders of ended jobs did not fold (they died, or the job was cancelled)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// publishTargets stores the allowed_targets of the runner's routes, which dlq-admin
// applies to a replay before accepting it (the runner applies them again when it
// produces: the configuration may change in between). It reports success.
func (r *Runner) publishTargets(ctx context.Context) bool {
	allowed := make(map[string][]string, len(r.cfg.Routes))
	for _, rc := range r.cfg.Routes {
		allowed[rc.Name] = rc.AllowedTargets
	}
	err := r.cfg.Store.PublishRouteTargets(ctx, allowed, r.cfg.Owner)
	if err != nil && ctx.Err() == nil {
		r.log.Warn().Err(err).Msg("cannot publish the routes' allowed_targets for dlq-admin; retrying")
	}
	return err == nil
}
