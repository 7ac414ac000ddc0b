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
//
// A file per phase: claim.go (a slot claims a job), job.go (one holder's execution of it,
// its two stages), page.go (its records selected a page ahead), lease.go (a page leased
// as a batch), send.go (the sending stage), produce.go (one record produced, its failure
// classified), settle.go (the settling stage: delivery reports awaited, transient
// failures produced again, records marked, progress applied in batch order), progress.go
// (the heartbeat), cancel.go (the counts of a cancelled job), finish.go (a job's end),
// fold.go (ended jobs' outcomes folded into their records), sweep.go (the sweeper).
package jobs

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/dlqops/dlq/internal/delivery"
	"github.com/dlqops/dlq/internal/delivery/rules"
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
