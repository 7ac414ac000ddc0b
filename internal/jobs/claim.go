package jobs

import (
	"context"
	"errors"
	"time"

	"github.com/dlqops/dlq/internal/store"
)

// loop is one job slot: it claims jobs for owner with claim and runs them, one at a time,
// until Stop.
func (r *Runner) loop(ctx context.Context, owner string, claim func(context.Context, string, time.Duration) (store.Job, error)) {
	for !r.stopRequested() {
		job, err := claim(ctx, owner, r.cfg.Lease)
		switch {
		case err == nil:
			r.run(ctx, owner, job)
			continue
		case errors.Is(err, store.ErrNotFound), ctx.Err() != nil:
		default:
			r.claimErrors.Inc()
			if n, ok := r.claimWarns.Allow("claim"); ok {
				r.log.Warn().Err(err).Int("not_logged", n).Msg("claim job")
			}
		}
		select {
		case <-r.stopping:
		case <-ctx.Done():
		case <-time.After(r.cfg.Poll):
		}
	}
}
