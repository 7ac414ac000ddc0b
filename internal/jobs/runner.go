// Package jobs executes the replay and discard jobs operators create through dlq-admin.
// The Runner is a dlq-worker component: it runs several jobs at once, each in a slot of its
// own, plus a slot only for jobs that name their records (instances share the work
// through FOR UPDATE SKIP LOCKED). A job walks its records in id order in batches, leases
// each batch's records (a narrow lease row each; the record reads as replaying), produces
// them with acks=all and records the produced partition and offset in each lease (the
// record reads as replayed; its row changes once, to replayed, when the runner folds the
// outcomes of an ended job), then saves its progress and cursor. The stages overlap: the
// next page is selected while one is leased and produced, up to maxUnsettled records are
// in flight, and several batches settle at once, their progress saved in batch order.
//
// A crash at any point loses nothing: the job's lease and its records' leases expire, and
// the next holder resumes after the saved cursor, picking up the replaying rows the dead
// holder left. A record produced just before such a crash is produced again, with the
// same replay id header ("<job>-<record>"), so downstream consumers can de-duplicate. A
// replay carries no redrive id: each hop writes exactly one de-duplication id.
package jobs

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"golang.org/x/time/rate"

	"github.com/dlqops/dlq/internal/backoff"
	"github.com/dlqops/dlq/internal/delivery"
	"github.com/dlqops/dlq/internal/delivery/rules"
	"github.com/dlqops/dlq/internal/headers"
	"github.com/dlqops/dlq/internal/kafkaclient"
	"github.com/dlqops/dlq/internal/lifecycle"
	"github.com/dlqops/dlq/internal/logging"
	"github.com/dlqops/dlq/internal/routes"
	"github.com/dlqops/dlq/internal/store"
)

// Config configures a Runner. Store, Kafka and Owner are required.
type Config struct {
	Store *store.Store
	Kafka kafkaclient.Config
	// Routes are the worker's routes: a record is replayed under the rules of the route
	// that parked it (allowed_targets, stripped headers); a record of a route missing
	// here is not replayed.
	Routes []routes.Config
	// Owner names this instance in leases (e.g. host/pid); unique per running process.
	Owner string
	// Lease is how long a job and its records stay held without a heartbeat: how long a
	// crashed instance's work waits before another resumes it. Default 30s.
	Lease time.Duration
	// Poll is how often an idle runner looks for a job. Default 1s.
	Poll time.Duration
	// BatchSize is how many records one step leases, produces and marks. Default and
	// most: store.MaxJobPage (2,000).
	BatchSize int
	// Concurrency is how many jobs this runner executes at once. Default 4. One more slot
	// takes only jobs that name their records (single-record replays and discards), so
	// that those never wait behind bulk jobs.
	Concurrency int
	Log         zerolog.Logger
	Registerer  prometheus.Registerer
}

// Runner executes jobs; it implements daemon.Component.
type Runner struct {
	cfg     Config
	log     zerolog.Logger
	records *prometheus.CounterVec
	jobs    *prometheus.CounterVec
	retries *prometheus.CounterVec
	// claimErrors counts failed claims; claimWarns lets one warning about them through
	// per interval, however many slots retry at their poll pace.
	claimErrors prometheus.Counter
	claimWarns  *logging.Throttle
	rules       map[string]*rules.Rules // by route name

	// Set by Start before any goroutine; the producer is closed once every slot has exited.
	producer *kafka.Producer
	topics   *delivery.Topics

	// The runner's goroutines, in two groups that Stop ends in turn. slots are the job
	// slots: ending their context asks each to finish its current batch and hand its job
	// back, and stopping is that context's Done (see stopRequested). life holds the
	// sweeper, the producer's closer and its event drain; its context is the jobs' work
	// context, whose end abandons them where they are, as in a crash.
	slots    lifecycle.Base
	stopping <-chan struct{}
	life     lifecycle.Base
}

// New validates cfg and registers the runner's metrics.
func New(cfg Config) (*Runner, error) {
	if cfg.Store == nil || cfg.Owner == "" || cfg.Kafka.BootstrapServers == "" {
		return nil, errors.New("jobs: Store, Owner and Kafka.BootstrapServers are required")
	}
	if cfg.Lease <= 0 {
		cfg.Lease = 30 * time.Second
	}
	if cfg.Poll <= 0 {
		cfg.Poll = time.Second
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 4
	}
	if cfg.BatchSize <= 0 || cfg.BatchSize > store.MaxJobPage {
		cfg.BatchSize = store.MaxJobPage
	}
	if cfg.Registerer == nil {
		cfg.Registerer = prometheus.NewRegistry()
	}
	r := &Runner{
		cfg: cfg,
		log: cfg.Log.With().Str("component", "jobs").Str("owner", cfg.Owner).Logger(),
		records: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "dlq_job_records_total",
			Help: "Records processed by operator jobs, by job kind and outcome (done, failed, skipped).",
		}, []string{"kind", "outcome"}),
		jobs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "dlq_jobs_finished_total",
			Help: "Operator jobs this instance finished, by kind and status.",
		}, []string{"kind", "status"}),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "dlq_job_produce_retries_total",
			Help: "Records of operator jobs produced again after a transient failure (broker down, lookup timed out), by job kind.",
		}, []string{"kind"}),
		claimErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "dlq_job_claim_errors_total",
			Help: "Failed attempts of a job slot to claim a job (PostgreSQL unreachable or failing); each slot tries again at its poll interval.",
		}),
		claimWarns: logging.NewThrottle(logging.WarnInterval),
	}
	r.rules = make(map[string]*rules.Rules, len(cfg.Routes))
	for _, rc := range cfg.Routes {
		r.rules[rc.Name] = rules.New(rc)
	}
	for _, c := range []prometheus.Collector{r.records, r.jobs, r.retries, r.claimErrors} {
		if err := cfg.Registerer.Register(c); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// Start opens the producer and starts claiming jobs. The work outlives ctx: Stop ends it.
func (r *Runner) Start(ctx context.Context) error {
	work, err := r.life.Start(context.WithoutCancel(ctx))
	if err != nil {
		return fmt.Errorf("jobs: %w", err)
	}
	stop, err := r.slots.Start(work)
	if err != nil {
		return fmt.Errorf("jobs: %w", err)
	}
	cm := delivery.ProducerConfig(r.cfg.Kafka)
	p, err := kafka.NewProducer(&cm)
	if err != nil {
		return fmt.Errorf("jobs: producer: %w", err)
	}
	r.producer, r.topics, r.stopping = p, delivery.NewTopics(p, metadataTTL, metadataTimeout), stop.Done()
	r.life.Go(func(context.Context) { r.drainEvents(p) })
	r.life.Go(func(context.Context) { r.closeProducer(stop, p) })
	r.life.Go(r.sweep)
	// Each slot holds its jobs under an owner of its own, so that a slot never takes over
	// a job another slot still runs (a heartbeat late enough to let the lease expire).
	for i := range r.cfg.Concurrency {
		r.slots.Go(func(context.Context) { r.loop(work, fmt.Sprintf("%s/%d", r.cfg.Owner, i), r.cfg.Store.ClaimJob) })
	}
	r.slots.Go(func(context.Context) { r.loop(work, r.cfg.Owner+"/records", r.cfg.Store.ClaimRecordJob) })
	r.log.Info().Dur("lease_ms", r.cfg.Lease).Msg("job runner started")
	return nil
}

// Stop lets each slot finish its current batch and hand its job back (its lease ends
// now, so another instance resumes it at once), then closes the producer. If ctx ends
// first, the work is abandoned where it is, as in a crash (its leases expire), and Stop
// returns: the goroutines end in the background and a later Stop waits for them again.
// Safe before Start, twice and concurrently.
func (r *Runner) Stop(ctx context.Context) error {
	if err := r.slots.Stop(ctx); err != nil {
		_ = r.life.Stop(ctx) // ctx has ended: this only abandons the work
		return fmt.Errorf("jobs: stop: %w (work abandoned; its leases will expire)", err)
	}
	if err := r.life.Stop(ctx); err != nil {
		return fmt.Errorf("jobs: stop: %w", err)
	}
	return nil
}

// closeProducer closes the producer once Stop began and every slot has exited, which
// ends drainEvents. Nothing is left to flush then: a slot awaits the reports of what it
// sent before it exits, and what a lost or abandoned job left in flight is leased, for
// its next holder or the sweeper.
func (r *Runner) closeProducer(stop context.Context, p *kafka.Producer) {
	<-stop.Done()
	_ = r.slots.Stop(context.Background()) // they are stopping already: wait for them
	p.Close()
}

// drainEvents logs producer-level events (errors not tied to one record) until Close.
func (r *Runner) drainEvents(p *kafka.Producer) {
	for ev := range p.Events() {
		if e, ok := ev.(kafka.Error); ok {
			r.log.Warn().Err(e).Msg("kafka producer")
		}
	}
}

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

func (r *Runner) stopRequested() bool {
	select {
	case <-r.stopping:
		return true
	default:
		return false
	}
}

// Metadata lookups: how long an answer is kept, how long one may take.
const (
	metadataTTL     = 30 * time.Second
	metadataTimeout = 10 * time.Second
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

// sendAll selects, leases and sends batches until the selection is exhausted (false, nil),
// the runner stops (true, nil) or something fails. It closes out. A job without a rate
// limit leases its next page while it produces one; a record leased and not produced goes
// back where it was before sendAll returns.
func (x *execution) sendAll(ctx context.Context, out chan<- *batch) (stopped bool, err error) {
	defer close(out)
	size := x.batchSize()
	var limiter *rate.Limiter
	if rps := x.job.RatePerSecond; rps > 0 {
		limiter = rate.NewLimiter(rate.Limit(rps), size)
	}
	paging, stopPaging := context.WithCancel(ctx)
	pages := make(chan *page, 1)
	cursor := x.progress.Cursor // before any batch settles
	go x.selectAll(paging, cursor, size, limiter == nil, pages)
	defer func() {
		stopPaging()
		x.returnUnsent(ctx, pages)
	}()
	for !x.stopRequested() {
		var pg *page
		select {
		case pg = <-pages:
		case <-ctx.Done():
			return false, ctx.Err()
		}
		<-pg.ready
		if pg.err != nil || pg.last == 0 {
			return false, pg.err
		}
		b := pg.leased
		if b == nil {
			if err := limiter.WaitN(ctx, len(pg.recs)); err != nil {
				return false, err
			}
			if b, err = x.lease(ctx, pg.recs); err != nil {
				return false, err
			}
		}
		if len(b.sent) > 0 {
			b.results = make([]produced, len(b.sent))
			b.reports = make(chan kafka.Event, len(b.sent))
			b.produce(x.producer, &x.enc, x.produce, allOf(len(b.sent)))
			b.handed = b.inFlight
			x.handed.Add(int64(b.handed))
			// What the producer holds reaches the target whatever happens next: it is
			// settled and counted even when the sending stops now (a cancel).
			out <- b
			continue
		}
		select {
		case out <- b:
		case <-ctx.Done():
			return false, ctx.Err()
		}
	}
	return true, nil
}

// page is one page of a job's records, leased ahead (leased) or not (recs), or the error
// that ended the selection; last is 0 once the selection is exhausted. Its fields are
// set when ready is closed.
type page struct {
	ready  chan struct{}
	last   int64
	recs   []store.Record
	leased *batch
	err    error
}

// selectAll reads the job's records page by page after cursor, one page ahead of the
// sending, and leases each (ahead) as it hands it over, until the selection is exhausted
// (a page with last 0), fails or ctx ends. A page is handed over before its lease starts,
// so that every lease it starts is in out.
func (x *execution) selectAll(ctx context.Context, cursor int64, size int, ahead bool, out chan<- *page) {
	defer close(out)
	for {
		recs, err := x.cfg.Store.JobRecords(ctx, x.job, cursor, size)
		pg := &page{ready: make(chan struct{}), recs: recs, err: err}
		if err == nil && len(recs) > 0 {
			pg.last = recs[len(recs)-1].ID
		}
		select {
		case out <- pg:
		case <-ctx.Done():
			return
		}
		if pg.last == 0 {
			close(pg.ready)
			return
		}
		if !ahead {
			close(pg.ready)
		} else {
			go func() {
				defer close(pg.ready)
				pg.leased, pg.err = x.lease(ctx, recs)
			}()
		}
		cursor = pg.last
	}
}

// returnUnsent waits for the pages selectAll handed over and nobody sent, and puts back
// where they were the records leased for them.
func (x *execution) returnUnsent(ctx context.Context, pages <-chan *page) {
	for pg := range pages {
		<-pg.ready
		if pg.leased == nil || len(pg.leased.sent) == 0 {
			continue
		}
		ids := recordIDs(pg.leased.sent)
		if _, err := x.cfg.Store.AbortReplays(context.WithoutCancel(ctx), x.job.ID, x.owner, ids, "", x.actor()); err != nil {
			x.log.Warn().Err(err).Int("records", len(ids)).Msg("cannot put back records leased and not sent; their leases expire")
		}
	}
}

// settleAll settles up to settlers batches at once and applies their outcomes in batch
// order, saving progress after each, so that the saved cursor never passes a record
// that is not finished. On failure (above all the job lost: cancelled or taken over) it
// stops the sending stage and still settles what was sent, so that every record it
// leased ends replayed or back where it was.
func (x *execution) settleAll(ctx context.Context, in <-chan *batch, stopSending context.CancelFunc) error {
	type settling struct {
		b   *batch
		err chan error
	}
	// One settling waits in applied order below; settlers-1 more queue here, each
	// already running.
	order := make(chan settling, settlers-1)
	go func() {
		defer close(order)
		for b := range in {
			s := settling{b: b, err: make(chan error, 1)}
			order <- s
			go func() { s.err <- x.settle(ctx, b) }()
		}
	}()
	var failed error
	var saved time.Time    // progress last saved
	var settled int64      // handed records of the batches applied
	var savedSettled int64 // of those, the ones counted in the progress last saved
	lost := func(err error) {
		if errors.Is(err, errLost) {
			x.cancelled, x.settledAtCancel = x.wasCancelled(ctx), savedSettled
		}
	}
	for s := range order {
		err := <-s.err
		// A batch that says the job was lost settled all the same.
		settledAll := err == nil || errors.Is(err, errLost)
		if failed != nil {
			if settledAll && x.cancelled {
				x.apply(s.b) // what was in flight at the cancel and still reached the target
				continue
			}
			if err != nil && !errors.Is(err, errLost) && ctx.Err() == nil {
				x.log.Warn().Err(err).Msg("cannot settle a batch of a lost job; its leases expire")
			}
			continue
		}
		applied := err == nil
		if applied {
			x.apply(s.b)
			settled += int64(s.b.handed)
			if time.Since(saved) >= x.beatEvery() {
				saved = time.Now()
				if err = x.heartbeat(ctx); err == nil {
					savedSettled = settled
				}
			}
		}
		if err != nil {
			failed = err
			lost(err)
			if settledAll && !applied && x.cancelled {
				x.apply(s.b) // in flight at the cancel: counted as the ones after it
			}
			x.abandoned.Store(true)
			stopSending()
		}
	}
	if failed == nil && !saved.IsZero() {
		failed = x.heartbeat(ctx) // what settled since the last save
		lost(failed)
	}
	return failed
}

// wasCancelled reports whether the job, lost, was cancelled rather than taken over.
func (x *execution) wasCancelled(ctx context.Context) bool {
	j, err := x.cfg.Store.GetJob(ctx, x.job.ID)
	return err == nil && j.Status == store.JobCancelled
}

// settlers is how many batches a job settles at once: settling a batch is mostly one
// transaction that rewrites its rows, and PostgreSQL runs each on one core.
const settlers = 3

// apply counts a settled batch in the job's progress and moves the cursor past it.
func (x *execution) apply(b *batch) {
	x.progressMu.Lock()
	defer x.progressMu.Unlock()
	if b.why != "" && x.firstFailure == "" {
		x.firstFailure = fmt.Sprintf("record %d: %s", b.whyID, b.why)
	}
	x.progress.Done += int64(b.done)
	x.progress.Failed += int64(b.failed)
	x.progress.Skipped += int64(b.skipped)
	x.progress.Cursor = b.last
	x.count("done", b.done)
	x.count("failed", b.failed)
	x.count("skipped", b.skipped)
}

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

func (b *batch) refuse(id int64, why string, n int) {
	b.note(id, why)
	b.failed += n
}

// skip counts n records the job leaves alone (another job holds them, or they are not
// parked or scheduled any more).
func (b *batch) skip(id int64, n int) {
	b.note(id, "not parked or scheduled any more, or held by another job")
	b.skipped += n
}

func (b *batch) note(id int64, why string) {
	if b.why == "" {
		b.why, b.whyID = why, id
	}
}

// lease starts a batch of recs: the records already finished are counted, a discard
// job's are discarded, a replay job's are leased (sent, to be produced).
func (x *execution) lease(ctx context.Context, recs []store.Record) (*batch, error) {
	b := &batch{last: recs[len(recs)-1].ID}
	finished := store.StatusReplayed
	if x.job.Kind == store.JobDiscard {
		finished = store.StatusDiscarded
	}
	// The page is filtered in place, twice: a record is a few hundred bytes, and copying a
	// thousand of them into slices grown on the way cost more than the rest of this.
	todo := recs[:0]
	valueGiven := x.job.Edit != nil && x.job.Edit.ValueSet
	for i := range recs {
		switch {
		case recs[i].JobID == x.job.ID && recs[i].Status == finished:
			b.done++ // by an earlier holder that crashed before saving progress
			continue
		case x.job.Kind == store.JobReplay && recs[i].NoPayload() && !valueGiven:
			// dlq-admin refuses such a replay; one that reached the runner anyway (a job
			// of an earlier version) leaves the record parked rather than invent a record.
			b.refuse(recs[i].ID, errNoPayload.Error(), 1)
			continue
		}
		todo = append(todo, recs[i])
	}
	if len(todo) == 0 {
		return b, nil
	}
	if x.job.Kind == store.JobDiscard {
		n, err := x.cfg.Store.DiscardRecords(ctx, x.job.ID, recordIDs(todo), x.actor())
		if err != nil {
			return nil, err
		}
		b.done += n
		if n < len(todo) {
			b.skip(todo[0].ID, len(todo)-n)
		}
		return b, nil
	}
	leased, err := x.cfg.Store.BeginReplays(ctx, x.job.ID, recordIDs(todo), x.owner, x.cfg.Lease, x.actor())
	if errors.Is(err, store.ErrConflict) {
		return nil, errLost
	}
	if err != nil {
		return nil, err
	}
	first, n := todo[0].ID, len(todo)
	b.sent, b.leases = todo[:0], leased
	for i := range todo {
		if replayID, ok := leased.ReplayIDs[todo[i].ID]; ok {
			todo[i].ReplayID = replayID
			b.sent = append(b.sent, todo[i])
		}
	}
	if skipped := n - len(b.sent); skipped > 0 {
		b.skip(first, skipped)
	}
	return b, nil
}

func allOf(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// produce hands the records of b.sent at indexes to p with produce and enc. A failure is
// kept in its result for settle; after a failed metadata lookup the rest are not tried
// (each would wait for the lookup's timeout) and fail with it, to be retried.
func (b *batch) produce(p *kafka.Producer, enc *delivery.Encoder, produce producer, indexes []int) {
	var lookup error
	for _, i := range indexes {
		b.results[i].err = lookup
		if lookup != nil {
			continue
		}
		err := produce(p, enc, &b.sent[i], b.reports, i)
		if err == nil {
			b.inFlight++
			continue
		}
		b.results[i].err = err
		if errors.Is(err, errLookup) {
			lookup = err
		}
	}
}

// producer is execution.produce.
type producer func(p *kafka.Producer, enc *delivery.Encoder, rec *store.Record, reports chan kafka.Event, i int) error

// settle waits for a batch's delivery reports, extending the job's lease while it waits
// (a broker outage can hold them for the producer's whole delivery timeout), produces
// again after a backoff the records that failed for a transient cause (the broker is down,
// a lookup timed out) until they are delivered, marks each record replayed where it was
// produced or parked with the reason it cannot go, and moves the cursor past the batch.
//
// Once the job is lost (abandoned, or a heartbeat says so) nothing is retried; the
// records are only settled, those that failed transiently going back where they were.
// The caller applies the batch's counts (apply).
func (x *execution) settle(ctx context.Context, b *batch) error {
	// A heartbeat at least every second is also how a cancel is noticed while deliveries
	// wait.
	ticker := time.NewTicker(x.beatEvery())
	defer ticker.Stop()
	beat := !x.abandoned.Load()
	var lost error
	var enc delivery.Encoder
	for attempt := 0; ; attempt++ {
		if err := x.await(ctx, b, ticker, nil, &beat, &lost); err != nil {
			return err
		}
		retry := b.transient()
		if len(retry) == 0 || !beat || x.abandoned.Load() {
			break
		}
		if x.stopRequested() {
			lost = errStopped
			break
		}
		delay := retryBackoff.Delay(attempt, rand.Float64())
		x.retries.WithLabelValues(string(x.job.Kind)).Add(float64(len(retry)))
		x.log.Warn().Err(b.results[retry[0]].err).Int("records", len(retry)).Int64("delay_ms", delay.Milliseconds()).
			Msg("records failed for a transient cause; producing them again after a backoff")
		if err := x.await(ctx, b, ticker, time.After(delay), &beat, &lost); err != nil {
			return err
		}
		if !beat {
			break
		}
		if x.stopRequested() {
			lost = errStopped
			break
		}
		b.produce(x.producer, &enc, x.produce, retry)
	}
	var done []store.Redriven
	failed := map[store.Reason][]int64{}
	var back []int64 // failed transiently, the job lost or stopping: back where they were
	for i, res := range b.results {
		if res.err == nil {
			done = append(done, store.Redriven{ID: b.sent[i].ID, Produced: res.at})
			continue
		}
		retriable, reason := classify(res.err)
		if retriable {
			back = append(back, b.sent[i].ID)
			continue
		}
		failed[reason] = append(failed[reason], b.sent[i].ID)
		b.refuse(b.sent[i].ID, res.err.Error(), 1)
	}
	if len(done) > 0 {
		n, err := x.cfg.Store.FinishReplays(ctx, x.job.ID, x.owner, b.leases, done, x.actor())
		if err != nil {
			return err
		}
		if n < len(done) {
			lost = errLost // another holder took some over
		}
		b.done += n
	}
	if len(back) > 0 {
		failed[""] = append(failed[""], back...)
	}
	for reason, ids := range failed {
		if _, err := x.cfg.Store.AbortReplays(ctx, x.job.ID, x.owner, ids, reason, x.actor()); err != nil {
			return err
		}
	}
	return lost
}

// await waits until b has no delivery in flight and, when until is set, until it fires,
// heartbeating meanwhile. A lost job clears beat and sets lost; what is in flight is still
// awaited.
func (x *execution) await(ctx context.Context, b *batch, ticker *time.Ticker, until <-chan time.Time, beat *bool, lost *error) error {
	for b.inFlight > 0 || until != nil {
		select {
		case ev := <-b.reports:
			m, ok := ev.(*kafka.Message)
			if !ok {
				continue
			}
			b.inFlight--
			i := m.Opaque.(int)
			if m.TopicPartition.Error != nil {
				b.results[i].err = m.TopicPartition.Error
				continue
			}
			b.results[i] = produced{at: store.Coordinates{Topic: *m.TopicPartition.Topic, Partition: m.TopicPartition.Partition, Offset: int64(m.TopicPartition.Offset)}}
		case <-until:
			until = nil
		case <-ticker.C:
			if !*beat {
				if until != nil {
					return nil // nothing to retry for a lost job
				}
				continue
			}
			if err := x.heartbeat(ctx); errors.Is(err, errLost) {
				// Settle this batch all the same, then stop.
				*beat, *lost = false, err
			} else if err != nil {
				return err
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// transient returns the indexes of the records whose produce failed for a cause a retry
// may fix.
func (b *batch) transient() []int {
	var out []int
	for i, res := range b.results {
		if retriable, _ := classify(res.err); res.err != nil && retriable {
			out = append(out, i)
		}
	}
	return out
}

// retryBackoff spaces a job's retries of records that failed for a transient cause.
var retryBackoff = backoff.Policy{Base: 250 * time.Millisecond, Factor: 2, Cap: 10 * time.Second, Jitter: 0.2}

// errStopped: the runner is stopping; the job is handed back with the batch unsettled.
var errStopped = errors.New("runner stopping")

func recordIDs(recs []store.Record) []int64 {
	out := make([]int64, len(recs))
	for i, r := range recs {
		out[i] = r.ID
	}
	return out
}

// errUnknownRoute: the record's route is not in this worker's configuration, so nothing
// says where it may go.
var errUnknownRoute = errors.New("the record's route is not configured on this worker")

// errNoPayload: the record holds no record to replay (store.Record.NoPayload).
var errNoPayload = errors.New("the record has no payload (its source record was gone when the worker read its dead letter): " +
	"a replay would produce a record that never existed; replay it with its value")

// errLookup: a metadata lookup got no answer.
var errLookup = errors.New("metadata lookup")

// classify says whether a failed replay of a record may succeed if produced again (the
// one classifier of package delivery: the broker is down, a lookup timed out), and else
// the reason it is parked with: the precise one for a refusal or a permanent produce
// error, "" (the one it had) for a record of an unknown route or a fatal producer error.
func classify(err error) (retriable bool, reason store.Reason) {
	var refused *rules.Refusal
	switch {
	case errors.As(err, &refused):
		return false, refused.Reason
	case errors.Is(err, errUnknownRoute):
		return false, ""
	}
	switch class, reason := delivery.Classify(err); class {
	case delivery.Transient:
		return true, ""
	case delivery.Permanent:
		return false, reason
	}
	return false, ""
}

// produce sends the replay of rec through the delivery path: to its original topic, or
// the job's target, if its route allows it and it exists; key, value, timestamp and
// every foreign header exactly as stored; our headers rewritten with the replay metadata
// (and the retry count reset if the job asks). A *rules.Refusal says why it may not go.
func (x *execution) produce(p *kafka.Producer, enc *delivery.Encoder, rec *store.Record, reports chan kafka.Event, i int) error {
	rr := x.rules[rec.Route]
	if rr == nil {
		return fmt.Errorf("route %q: %w", rec.Route, errUnknownRoute)
	}
	topic, refused := rr.Target(rec.Origin.Topic, x.job.TargetTopic)
	if refused != nil {
		return refused
	}
	original := int32(-1)
	if topic == rec.Origin.Topic {
		original = rec.Origin.Partition
	}
	partition, ok, err := x.topics.Partition(topic, original, rec.Key)
	switch {
	case err != nil:
		return fmt.Errorf("%w of %s: %w", errLookup, topic, err)
	case !ok:
		return &rules.Refusal{Reason: store.ReasonUnknownTopic, Detail: "topic " + topic + " does not exist"}
	}
	env := headers.DecodeOf(rec.Headers).Envelope
	if x.job.ResetRetry {
		env.RetryCount = 0
	}
	env = env.Replayed(headers.Replay{Actor: x.job.CreatedBy, JobID: strconv.FormatInt(x.job.ID, 10), ReplayID: rec.ReplayID})
	src := delivery.Source[store.Header]{Key: rec.Key, Value: rec.Value, Timestamp: rec.Timestamp, Headers: rec.Headers}
	if e := x.job.Edit; e != nil {
		src = edited(src, e)
	}
	return delivery.Produce(enc, p, reports, delivery.Destination{Topic: topic, Partition: partition},
		src, env, rr.Encode, i)
}

// edited is what an operator's edit sends instead of the stored record: the edited value
// and foreign headers; the envelope still comes from the stored headers.
func edited(src delivery.Source[store.Header], e *store.Edit) delivery.Source[store.Header] {
	if e.ValueSet {
		src.Value = e.Value
	}
	if e.HeadersSet {
		src.Headers = make([]store.Header, len(e.Headers))
		for i, h := range e.Headers {
			src.Headers[i] = store.Header(h)
		}
	}
	return src
}
