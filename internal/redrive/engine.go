// Package redrive is the redrive engine of dlq-worker: for each route it keeps a consumer
// subscribed to the route's DLQ topics (paused between runs), and on each cron tick or
// operator request runs a bounded pass that redrives due records to their original topic,
// moves records not yet due to PostgreSQL as scheduled, parks the ones that need a human,
// and redrives the scheduled records that came due. Offsets are committed only over
// records that are acknowledged by the target (acks=all) or durably stored.
package redrive

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/robfig/cron/v3"
	"github.com/rs/zerolog"

	"github.com/dlqops/dlq/internal/kafkaclient"
	"github.com/dlqops/dlq/internal/lifecycle"
	"github.com/dlqops/dlq/internal/routes"
	"github.com/dlqops/dlq/internal/store"
)

// Options are the engine's dependencies.
type Options struct {
	Log      zerolog.Logger
	Clock    func() time.Time // default time.Now; decides what is due
	Store    *store.Store
	Kafka    kafkaclient.Config
	Registry prometheus.Registerer
	// InstanceID names this worker in runs, claims and client ids; default host-pid-random.
	InstanceID string
	// GroupInstanceID, when set, makes each route's consumer a static group member with
	// id GroupInstanceID.<route>: a restarted worker with the same id gets its partitions
	// back at once instead of after the session timeout. Two live consumers must never
	// share one (the broker fences the older).
	GroupInstanceID string
	// ControlPoll is how often operator controls (pause, resume, run now) are read; default 2 s.
	ControlPoll time.Duration
	// HeadroomProbe is how often each route looks at its oldest unresolved share-group
	// dead letter for dlq_worker_source_headroom_records; default 1 min.
	HeadroomProbe time.Duration
	// OnFatal is called once when a route hits a fatal error (the binary then exits
	// non-zero); not for a fence by another worker holding the route's identity, which
	// leaves the route stopped and not ready instead (identity.go).
	OnFatal func(error)
	// ReadPath is ReadPathQueue (the default) or ReadPathPoll: how each
	// route reads its records and produces their redrives (see newWorker).
	ReadPath string
}

// Engine runs every route. It is a daemon.Component.
type Engine struct {
	log        zerolog.Logger
	clock      func() time.Time
	store      *store.Store
	kafka      kafkaclient.Config
	metrics    *metrics
	instanceID string
	groupInst  string
	poll       time.Duration
	// headroomEvery: see Options.HeadroomProbe.
	headroomEvery time.Duration
	onFatal       func(error)
	configs       []routes.Config
	readPath      string

	// mu serializes Start and Stop and guards the fields below it; no goroutine of the
	// engine takes it, so Stop may hold it while it waits for them.
	mu      sync.Mutex
	started bool
	stopped bool
	workers []*worker
	live    atomic.Pointer[[]*worker] // workers, for Ready and RunNow without the lock
	cron    *cron.Cron
	cronIDs []cron.EntryID         // per worker: its schedule's entry, whose next run operators see
	loops   []chan error           // nil once that loop's result is taken
	stops   []chan context.Context // carries Stop's context: its deadline is the grace
	closed  bool                   // every loop ended and the background goroutines too
	// life runs the routes' loops, the controls poller, the oldest-due watcher and the
	// operators' runs.
	life     lifecycle.Base
	fatalMu  sync.Mutex // guards fatalErr, not mu: Stop holds mu while it waits for loops that report one
	fatalErr error
}

// New validates the routes and builds an engine; nothing connects before Start.
func New(rcs []routes.Config, o Options) (*Engine, error) {
	if err := routes.ValidateAll(rcs); err != nil {
		return nil, err
	}
	if o.Clock == nil {
		o.Clock = time.Now
	}
	if o.ControlPoll <= 0 {
		o.ControlPoll = 2 * time.Second
	}
	if o.HeadroomProbe <= 0 {
		o.HeadroomProbe = time.Minute
	}
	switch o.ReadPath {
	case "":
		o.ReadPath = ReadPathQueue
	case ReadPathQueue, ReadPathPoll:
	default:
		return nil, fmt.Errorf("redrive: read path %q: must be %s or %s", o.ReadPath, ReadPathQueue, ReadPathPoll)
	}
	if o.InstanceID == "" {
		host, _ := os.Hostname()
		var b [3]byte
		_, _ = rand.Read(b[:])
		o.InstanceID = fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b[:]))
	}
	m, err := newMetrics(o.Registry)
	if err != nil {
		return nil, fmt.Errorf("redrive metrics: %w", err)
	}
	return &Engine{
		log: o.Log.With().Str("component", "redrive").Logger(), clock: o.Clock, store: o.Store, kafka: o.Kafka,
		metrics: m, instanceID: o.InstanceID, groupInst: o.GroupInstanceID, poll: o.ControlPoll, headroomEvery: o.HeadroomProbe, onFatal: o.OnFatal, configs: rcs, readPath: o.ReadPath,
	}, nil
}

// Start registers the routes for operators, subscribes every route's consumer and starts
// the schedules. The engine's work outlives ctx (a signal context) until Stop.
func (e *Engine) Start(ctx context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.started {
		return errors.New("redrive: started twice")
	}
	e.started = true
	// The work outlives ctx (a signal context): Stop ends it.
	base, err := e.life.Start(context.WithoutCancel(ctx))
	if err != nil {
		return err
	}
	e.cron = cron.New(cron.WithParser(routes.Parser), cron.WithChain(cron.SkipIfStillRunning(cronLogger{e.log})))
	for _, rc := range e.configs {
		w, err := newWorker(e, rc)
		if err != nil {
			e.stopLocked(ctx)
			return err
		}
		e.workers = append(e.workers, w)
		if err := w.consumer.SubscribeTopics(rc.Topics, w.rebalance); err != nil {
			e.stopLocked(ctx)
			return fmt.Errorf("routes[%s].topics: subscribe: %w", rc.Name, err)
		}
		id, err := e.cron.AddFunc(rc.Schedule, func() { w.requests.trigger(base, "schedule") })
		if err != nil {
			e.stopLocked(ctx)
			return fmt.Errorf("routes[%s].schedule: %w", rc.Name, err)
		}
		e.cronIDs = append(e.cronIDs, id)
	}
	e.loadBreakerOverrides(base)
	for _, w := range e.workers {
		stop, done := make(chan context.Context, 1), make(chan error, 1)
		e.stops, e.loops = append(e.stops, stop), append(e.loops, done)
		e.life.Go(func(ctx context.Context) { w.loop(ctx, stop, done) })
	}
	e.life.Go(e.controls)
	e.life.Go(e.watchOldestDue)
	ws := e.workers
	e.live.Store(&ws)
	e.cron.Start()
	e.log.Info().Int("routes", len(e.workers)).Str("instance", e.instanceID).Msg("redrive engine started")
	return nil
}

// Stop stops the schedules, lets in-flight work finish within ctx, commits and closes.
// It returns when ctx ends even if a route is still closing (librdkafka's synchronous
// commit and close wait for the group coordinator, up to the session timeout, when the
// broker is down); that route finishes closing in the background, committing nothing
// past what is done, and a later Stop waits for it again. Safe before Start and twice.
func (e *Engine) Stop(ctx context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.stopLocked(ctx)
}

func (e *Engine) stopLocked(ctx context.Context) error {
	if !e.started || e.closed {
		return nil
	}
	if !e.stopped {
		e.stopped = true
		for _, s := range e.stops {
			s <- ctx
		}
		select {
		case <-e.cron.Stop().Done(): // waits for a scheduled trigger, which waits for its run
		case <-ctx.Done():
		}
		if len(e.loops) < len(e.workers) { // Start failed half-way: close what it opened
			for _, w := range e.workers[len(e.loops):] {
				w.closeClients()
			}
		}
	}
	var errs []error
	open := false
	for i, l := range e.loops {
		if l == nil {
			continue
		}
		select {
		case err := <-l:
			errs, e.loops[i] = append(errs, err), nil
			continue
		default:
		}
		select {
		case err := <-l:
			errs, e.loops[i] = append(errs, err), nil
		case <-ctx.Done():
			open = true
			errs = append(errs, fmt.Errorf("route %s: still closing when the shutdown grace ran out (nothing is committed past what is done): %w",
				e.workers[i].route.Name, ctx.Err()))
		}
	}
	if open {
		_ = e.life.Stop(ctx) // ctx has ended: cancels the work; a later Stop waits for it
	} else {
		_ = e.life.Stop(context.Background()) // the loops returned: the rest end once cancelled
		e.closed = true
	}
	return errors.Join(errs...)
}

// Err is the first fatal error a route hit, nil if none.
func (e *Engine) Err() error {
	e.fatalMu.Lock()
	defer e.fatalMu.Unlock()
	return e.fatalErr
}

func (e *Engine) fatal(err error) {
	e.fatalMu.Lock()
	first := e.fatalErr == nil
	if first {
		e.fatalErr = err
	}
	e.fatalMu.Unlock()
	if first && e.onFatal != nil {
		e.onFatal(err)
	}
}

func (e *Engine) liveWorkers() []*worker {
	if ws := e.live.Load(); ws != nil {
		return *ws
	}
	return nil
}

// Ready is a readiness check: not ready while a route cannot progress.
func (e *Engine) Ready(ctx context.Context) error {
	var bad []string
	for _, w := range e.liveWorkers() {
		if err := w.health.ready(ctx); err != nil {
			bad = append(bad, w.route.Name+": "+err.Error())
		} else if err := w.topicsOK.missing(probeTimeout(ctx)); err != nil {
			bad = append(bad, w.route.Name+": "+err.Error())
		}
	}
	if len(bad) > 0 {
		sort.Strings(bad)
		return errors.New(strings.Join(bad, "; "))
	}
	return nil
}

// RunNow runs route now and returns when the run ended; it fails when a run of the route
// is already in progress or the route is paused.
func (e *Engine) RunNow(ctx context.Context, route string) error {
	for _, w := range e.liveWorkers() {
		if w.route.Name == route {
			return w.requests.runOnce(ctx)
		}
	}
	return fmt.Errorf("redrive: no route %q", route)
}

// publishNextRuns writes each route's next scheduled run, with its schedule, when it changed since published
// (once per scheduled run), so the admin API can show it.
func (e *Engine) publishNextRuns(ctx context.Context, published []time.Time) {
	for i, w := range e.workers {
		next := e.cron.Entry(e.cronIDs[i]).Next
		if next.IsZero() || next.Equal(published[i]) {
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, callTimeout)
		err := e.store.SetNextRun(cctx, w.route.Name, w.route.Schedule, next)
		cancel()
		if err == nil {
			published[i] = next
		}
	}
}
