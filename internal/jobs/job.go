package jobs

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/rs/zerolog"

	"github.com/dlqops/dlq/internal/delivery"
	"github.com/dlqops/dlq/internal/store"
)

// maxUnsettled bounds the records a job has leased and produced but not yet settled (marked
// replayed or returned), as a raw produce loop bounds its unacknowledged messages.
const maxUnsettled = 10_000

// errLost: the job was cancelled or another instance holds it now.
var errLost = errors.New("job cancelled or taken over")

// run executes job until it ends, is lost, or the runner stops. Two stages overlap: one
// selects, leases and sends batch after batch; the other waits for each batch's delivery
// reports, marks its records and saves progress, in batch order, so that the saved cursor
// never passes a record that is not finished.
func (r *Runner) run(ctx context.Context, owner string, job store.Job) {
	log := r.log.With().Int64("job_id", job.ID).Str("kind", string(job.Kind)).Logger()
	log.Info().Int64("cursor", job.Cursor).Int64("done", job.Done).Msg("job claimed")
	x := &execution{Runner: r, owner: owner, job: job, log: log, progress: job.JobProgress}
	if x.progress.Total == 0 {
		x.progress.Total = job.ConfirmedCount
	}
	if job.Kind == store.JobReplay && job.TargetTopic != "" {
		// A missing target fails the job before it touches a record.
		n, err := r.topics.Partitions(job.TargetTopic)
		if err != nil {
			log.Warn().Err(err).Msg("cannot look up the target topic; the job resumes when its lease expires")
			return
		}
		if n == 0 {
			x.firstFailure = "target topic " + job.TargetTopic + " does not exist"
			r.finishFailed(ctx, x)
			return
		}
	}
	// Cancelling sendCtx stops producing; the settling stage keeps ctx, so that what was
	// sent settles even when the job was cancelled.
	sendCtx, stopSending := context.WithCancel(ctx)
	defer stopSending()
	// Up to maxUnsettled records are leased and produced ahead of the settling stage, so
	// that the broker's acks and the settling's row updates overlap the next pages'.
	batches := make(chan *batch, max(1, maxUnsettled/x.batchSize()-settlers-1))
	settled := make(chan error, 1)
	go func() { settled <- x.settleAll(ctx, batches, stopSending) }()
	stopped, err := x.sendAll(sendCtx, batches)
	if errors.Is(err, context.Canceled) && ctx.Err() == nil {
		err = nil // stopped by the settling stage, whose error follows
	}
	if serr := <-settled; serr != nil {
		err = serr
	}
	switch {
	case err != nil && !errors.Is(err, errStopped):
		// Whatever failed (the database, a lost lease), the leases keep the records safe;
		// this job is resumed once they expire.
		if !errors.Is(err, errLost) && ctx.Err() == nil {
			log.Warn().Err(err).Msg("job interrupted; it resumes when its lease expires")
		} else {
			log.Info().Err(err).Msg("job left")
			if x.cancelled {
				r.settleCancelled(ctx, x)
			}
			r.fold(ctx, job.ID) // cancelled: what it replayed (taken over: nothing yet)
		}
	case stopped || err != nil:
		if err := r.cfg.Store.ReleaseJob(context.WithoutCancel(ctx), job.ID, owner); err != nil {
			log.Warn().Err(err).Msg("release job")
		}
		log.Info().Msg("job handed back")
	default:
		r.finish(ctx, x)
		r.fold(ctx, job.ID)
	}
}

// execution is one holder's run of one job. progress and firstFailure belong to the
// settling stage's applier (settleAll); its settlings read progress to heartbeat.
type execution struct {
	*Runner
	owner        string // the slot's, in leases
	job          store.Job
	log          zerolog.Logger
	progressMu   sync.Mutex
	progress     store.JobProgress
	firstFailure string
	enc          delivery.Encoder // the sending stage's
	// abandoned is set once the job is lost or failed: the batches still settling retry
	// nothing more.
	abandoned atomic.Bool
	// handed counts the records the sending stage handed to the producer.
	handed atomic.Int64
	// cancelled says the job was lost to a cancel (not taken over), and settledAtCancel
	// how many handed records the job's stored counts included then (its last saved
	// progress); the applier's, read once both stages ended.
	cancelled       bool
	settledAtCancel int64
}

// batch is one step of a job between its two stages.
type batch struct {
	last     int64          // the cursor once the batch is settled
	done     int            // finished without producing (discarded, or by an earlier holder)
	failed   int            // refused before producing
	skipped  int            // left alone: see skip
	why      string         // the first refusal
	whyID    int64          // its record
	sent     []store.Record // leased and produced, awaiting reports
	leases   store.ReplayBatch
	results  []produced
	reports  chan kafka.Event
	inFlight int
	handed   int // records handed to the producer by the sending stage
}

type produced struct {
	at  store.Coordinates
	err error
}

func (x *execution) actor() store.Actor {
	return store.Actor{Name: x.job.CreatedBy, RequestID: x.job.RequestID}
}

// batchSize is how many records one batch of the job takes: at most one second's worth
// when the job is rate-limited, which keeps the pace even.
func (x *execution) batchSize() int {
	if rps := x.job.RatePerSecond; rps > 0 {
		return min(x.cfg.BatchSize, rps)
	}
	return x.cfg.BatchSize
}

// errStopped: the runner is stopping; the job is handed back with the batch unsettled.
var errStopped = errors.New("runner stopping")
