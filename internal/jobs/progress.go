package jobs

import (
	"context"
	"errors"
	"time"

	"github.com/dlqops/dlq/internal/store"
)

// beatEvery is how often a running job saves its progress and extends its lease: at least
// every second, which is also how soon a cancel is noticed while deliveries wait.
func (x *execution) beatEvery() time.Duration {
	return min(x.cfg.Lease/3, time.Second)
}

// heartbeat saves progress and extends the job's lease; errLost when the job is no
// longer ours.
func (x *execution) heartbeat(ctx context.Context) error {
	x.progressMu.Lock()
	p := x.progress
	x.progressMu.Unlock()
	err := x.cfg.Store.UpdateJobProgress(ctx, x.job.ID, x.owner, p, x.cfg.Lease)
	if errors.Is(err, store.ErrConflict) {
		return errLost
	}
	return err
}

func (x *execution) count(outcome string, n int) {
	if n > 0 {
		x.records.WithLabelValues(string(x.job.Kind), outcome).Add(float64(n))
	}
}
