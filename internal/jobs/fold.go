package jobs

import (
	"context"
)

// fold moves the replay outcomes of job (0: of every ended job) from their lease rows into
// their records' rows (store.FoldReplays), a batch at a time, until none is left, ctx
// ends or the runner stops. A job records each replay in its record's narrow lease row,
// which is cheap enough for a replay to keep pace with a raw produce loop; the record's
// wide row and its indexes change here, once the job has ended. It reports whether it
// folded everything.
func (r *Runner) fold(ctx context.Context, job int64) bool {
	for !r.stopRequested() {
		n, err := r.cfg.Store.FoldReplays(ctx, job, foldBatches)
		if err != nil {
			if ctx.Err() == nil {
				r.log.Warn().Err(err).Int64("job_id", job).Msg("fold replay outcomes into their records; the sweeper retries")
			}
			return false
		}
		if n < foldBatches {
			return true
		}
	}
	return false
}

// foldBatches is how many batches of replay outcomes one fold transaction moves: a job's
// batch is up to a thousand records.
const foldBatches = 1
