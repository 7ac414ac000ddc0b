package jobs

import (
	"context"
	"time"

	"github.com/dlqops/dlq/internal/store"
)

// settleCancelled stores the counts of a job cancelled while x ran it, now that everything
// x handed to the producer settled: done counts every record that reached the target,
// those delivered after the cancel included, and the job says how many were in flight at
// the cancel: handed to the producer and not in the counts the job showed then (its last
// saved progress). Without it the job would show the counts of its last heartbeat while
// its rows and the target show more.
func (r *Runner) settleCancelled(ctx context.Context, x *execution) {
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	inFlight := x.handed.Load() - x.settledAtCancel
	job, err := r.cfg.Store.SettleCancelledJob(fctx, x.job.ID, x.progress, inFlight, store.Actor{Name: x.owner})
	if err != nil {
		x.log.Warn().Err(err).Int64("done", x.progress.Done).Int64("in_flight_records", inFlight).
			Msg("cannot store the counts of a cancelled job; it shows those of its last heartbeat")
		return
	}
	x.log.Info().Int64("done", job.Done).Int64("failed", job.Failed).Int64("skipped", job.Skipped).Int64("total", job.Total).
		Int64("in_flight_records", inFlight).Msg("cancelled job settled: what was in flight is counted")
}

// wasCancelled reports whether the job, lost, was cancelled rather than taken over.
func (x *execution) wasCancelled(ctx context.Context) bool {
	j, err := x.cfg.Store.GetJob(ctx, x.job.ID)
	return err == nil && j.Status == store.JobCancelled
}
