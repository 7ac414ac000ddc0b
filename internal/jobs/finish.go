package jobs

import (
	"context"
	"fmt"
	"time"

	"github.com/dlqops/dlq/internal/store"
)

func (r *Runner) finish(ctx context.Context, x *execution) {
	p := &x.progress
	// The dry run's count may differ from what the job met: records it counted that no
	// longer match are skipped, and more that match raise the total.
	p.Skipped += max(0, p.Total-p.Done-p.Failed-p.Skipped)
	p.Total = p.Done + p.Failed + p.Skipped
	status, msg := store.JobSucceeded, ""
	if p.Failed > 0 || p.Skipped > 0 {
		msg = fmt.Sprintf("%d of %d records failed, %d skipped; first: %s", p.Failed, p.Total, p.Skipped, x.firstFailure)
		if p.Done == 0 {
			status = store.JobFailed
		}
	}
	r.end(ctx, x, status, msg)
}

// finishFailed ends a job that failed as a whole, before it touched a record.
func (r *Runner) finishFailed(ctx context.Context, x *execution) {
	x.progress.Skipped = x.progress.Total - x.progress.Done - x.progress.Failed
	r.end(ctx, x, store.JobFailed, x.firstFailure)
}

func (r *Runner) end(ctx context.Context, x *execution, status store.JobStatus, msg string) {
	// The final write survives a stop that arrives now.
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := r.cfg.Store.UpdateJobProgress(fctx, x.job.ID, x.owner, x.progress, r.cfg.Lease); err != nil {
		x.log.Info().Err(err).Msg("job left before finishing")
		return
	}
	if _, err := r.cfg.Store.FinishJob(fctx, x.job.ID, x.owner, status, msg); err != nil {
		x.log.Warn().Err(err).Msg("finish job")
		return
	}
	r.jobs.WithLabelValues(string(x.job.Kind), string(status)).Inc()
	x.log.Info().Str("status", string(status)).Int64("done", x.progress.Done).Int64("failed", x.progress.Failed).
		Int64("skipped", x.progress.Skipped).Msg("job finished")
}
