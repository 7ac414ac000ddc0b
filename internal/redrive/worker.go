package redrive

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/dlqops/dlq/internal/delivery"
	"github.com/dlqops/dlq/internal/kafkaclient"
	"github.com/dlqops/dlq/internal/routes"
	"github.com/dlqops/dlq/internal/store"
)

// Tuning that is not worth a configuration key.
const (
	pollInterval   = 20 * time.Millisecond
	pollBurst      = 256         // records taken per loop turn while the consumer has them ready
	throttleHold   = time.Second // longest a throttle stops polling before it pauses instead
	claimBatch     = 500
	claimLease     = 10 * time.Minute // above message.timeout.ms: a claim outlives its produces
	callTimeout    = 10 * time.Second // one PostgreSQL or Kafka metadata call
	metadataTTL    = 30 * time.Second
	commitInterval = 250 * time.Millisecond // librdkafka's auto-commit of the stored offsets
	ledgerEvery    = 10 * time.Millisecond  // between ledger writes of new watermarks: a crash sends again what the ledger did not hold yet
	wakeTimeout    = time.Second            // see wakeFetcher
	// Batches are stored by a few goroutines at once, each batch capped, so the COPYs of
	// consecutive batches overlap instead of one large COPY at a time holding the loop
	// back. Each storer holds one pooled connection while it writes.
	storers       = 3
	storeBatchMax = 2000
)

// worker runs one route. It is a thin dispatcher: its loop goroutine polls the consumer
// and hands each event to the part that owns its concern. Each part is a type in a file
// of its own, built by newWorker with what it uses and no pointer back to the worker, and
// says which goroutine owns which of its fields. Two parts hold the loop's own work, on
// the loop goroutine: the walk (record.go) takes each record to its end, the runner
// (run.go) drives a run's phases; they share the loop's state (loopState) with the
// worker. A record read from the DLQ goes, top to bottom:
//
//	worker.go      loop → step → handle: one turn, polling the consumer
//	record.go      the walk's onMessage: its partition (partitions.go) must be reading
//	               it, and the throttle (throttle.go: in-flight bound, rate limit) let it
//	               start
//	record.go      process: header warnings (warnings.go), a share group's pointer
//	               resolved from its source (resolve.go, sourcefetch.go), classify
//	               (classify.go), then redrive it or store it
//	sender.go      redrive: the sender goroutine produces it to its original topic
//	record.go      onDelivery → onRedriveAck, or onProduceFailure: park it, or produce
//	               it again after the stall backoff (health.go)
//	parker.go      store: the parker's storer goroutines write it to PostgreSQL → onStored
//	offsets.go     the ledger: its new position written ahead by the position writer
//	               goroutine, flushed by the flusher goroutine, then handed to
//	               librdkafka to commit
//
// Around that walk: rebalance.go (assignments checked against the ledger, revocations),
// run.go (the runner: a run's phases, the DLQ up to its high watermarks, then the due
// scheduled rows through claims.go, then the run's ledger rows), requests.go (run
// requests and the operator's pause, from other goroutines), fetchstall.go (a partition
// the run reads that librdkafka stopped fetching is kicked), health.go and topiccheck.go
// (readiness), headroom.go (share-group pointers close to their source's retention).
//
// The loop goroutine owns every field below unless its comment says otherwise. The
// sender, the parker's storers and the ledger's position writer and flusher share only
// channels with it (and the health atomics).
type worker struct {
	*loopState
	*clients // readpath.go: set up by newWorker, then only used
	route    route
	log      zerolog.Logger

	// The engine's, passed in by newWorker.
	clock      func() time.Time
	store      *store.Store
	metrics    *metrics
	instanceID string
	identity   identity    // identity.go: its static membership, for a fence
	onFatal    func(error) // reports the error that stops the loop; safe from any goroutine

	// The route's series of the per-record metrics, looked up once.
	inFlightGauge prometheus.Gauge
	redrivenCount prometheus.Counter
	groupCount    *groupRedriven

	requests *runRequests // requests.go: shared with RunNow, the schedule and the controls goroutine

	// The parts.
	health   *health          // health.go: shared with Ready and the storers
	topicsOK *topicCheck      // topiccheck.go: shared with Ready
	parts    *partitions      // partitions.go: assigned and revoked in rebalance.go
	throttle *throttle        // throttle.go
	hdrWarn  *headerWarnings  // warnings.go
	sources  *sources         // resolve.go: the source records of share groups' dead letters
	headroom *headroom        // headroom.go
	topics   *delivery.Topics // the original topics' partitions, cached
	send     *sender          // sender.go: its goroutine produces redriven records
	park     *parker          // parker.go: a Start/Stop service, its storers write rows
	ledger   *ledger          // offsets.go: a Start/Stop service, its writer goes before commits
	claims   *claims          // claims.go: due scheduled rows, leased, redriven and settled
	breaker  *breaker         // breaker.go: holds the route's redrives while they come back
	walk     *walk            // record.go: each record's walk and the answers to it
	runner   *runner          // run.go: a run's phases
	txn      *txn             // txn.go: an exactly_once route's transactions; nil on at_least_once

	// consumerFatal: the consumer itself reported the fatal error, so Close would never return.
	consumerFatal bool
}

// loopState is the loop's own state, owned by the loop goroutine and shared by the parts
// that run on it: the worker, the walk and the runner.
type loopState struct {
	run      *runState
	inFlight int     // records read (or claimed) and not yet acknowledged or stored
	retries  []retry // produces waiting for the stall backoff
	fatal    error   // set by any part's answer; the loop stops on it
}

func newWorker(e *Engine, rc routes.Config) (*worker, error) {
	r, err := compileRoute(rc)
	if err != nil {
		return nil, err
	}
	w := &worker{
		route:      r,
		log:        e.log.With().Str("route", r.Name).Logger(),
		clock:      e.clock,
		store:      e.store,
		metrics:    e.metrics,
		instanceID: e.instanceID,
		onFatal:    e.fatal,
		loopState:  &loopState{},
		clients:    &clients{},
	}
	w.requests = &runRequests{log: w.log, runReq: make(chan chan error)}
	w.inFlightGauge = e.metrics.inFlight.WithLabelValues(r.Name)
	w.redrivenCount = e.metrics.redriven.WithLabelValues(r.Name)
	w.groupCount = newGroupRedriven(r.Config, e.metrics.groupRedriven)
	cc := kafkaclient.ConsumerConfig(e.kafka, r.Group)
	// Offsets are stored only up to the tracker's watermark (enable.auto.offset.store is
	// off); librdkafka commits what is stored every commitInterval, on revoke and on close.
	cc["enable.auto.commit"] = true
	cc["auto.commit.interval.ms"] = int(commitInterval / time.Millisecond)
	exactlyOnce := r.Delivery == routes.DeliveryExactlyOnce
	if exactlyOnce {
		cc["enable.auto.commit"] = false // offsets commit in the route's transactions
		delete(cc, "auto.commit.interval.ms")
	}
	cc["enable.partition.eof"] = true // a run ends at end of log even when markers hide the last offset
	cc["client.id"] = e.instanceID
	if e.groupInst != "" {
		cc["group.instance.id"] = e.groupInst + "." + r.Name
	}
	w.identity = newIdentity(e.kafka, r.Group, cc)
	pc := delivery.ProducerConfig(e.kafka)
	pc["client.id"] = e.instanceID
	kafkaclient.PipeQueues(cc, pc, r.MaxInFlight)
	if w.consumer, err = kafka.NewConsumer(&cc); err != nil {
		return nil, fmt.Errorf("route %s: consumer: %w", r.Name, err)
	}
	if w.producer, err = kafka.NewProducer(&pc); err != nil {
		w.consumer.Close()
		return nil, fmt.Errorf("route %s: producer: %w", r.Name, err)
	}
	var produce produceFunc
	if exactlyOnce {
		identity := cmp.Or(e.groupInst, e.instanceID)
		if w.tx, err = openTxnProducer(pc, txnID(identity, r.Name)); err != nil {
			w.closeClients()
			return nil, fmt.Errorf("route %s: transactional producer: %w", r.Name, err)
		}
		produce = w.openTxnPath(e.readPath)
	} else if produce, err = w.openReadPath(e.readPath, pc); err != nil {
		w.closeClients()
		return nil, fmt.Errorf("route %s: %w", r.Name, err)
	}
	// The parts, each given what it uses (health first: the others report to it).
	w.health = newHealth(w.log, r.Name, e.metrics.errors, w.producer)
	w.topicsOK = &topicCheck{producer: w.producer, topics: r.Topics}
	w.topics = delivery.NewTopics(w.producer, metadataTTL, callTimeout)
	w.parts = newPartitions(w.consumer, w.records, w.log)
	w.throttle = newThrottle(r.MaxInFlight, r.RateLimit, w.parts)
	w.park = newParker(e.store, r.Name, w.log, w.health, e.metrics)
	w.ledger = newLedger(w.consumer, e.store, r, w.log, w.health, e.metrics)
	w.hdrWarn = &headerWarnings{log: w.log, route: r.Name, count: e.metrics.headerWarnings}
	w.sources = &sources{kafka: e.kafka, group: r.Group, clientID: e.instanceID, route: r.Name, topics: w.topics, store: e.store,
		seeks: e.metrics.sourceSeeks}
	w.headroom = &headroom{every: e.headroomEvery, route: r.Name, gauge: e.metrics.sourceHeadroom, log: w.log, health: w.health,
		sources: w.sources, series: map[partKey]bool{}}
	w.breaker = newBreaker(r, e.instanceID, w.log, e.store, e.metrics)
	w.claims = &claims{store: e.store, route: r, instanceID: e.instanceID, clock: e.clock, producer: w.producer, topics: w.topics,
		health: w.health, parked: e.metrics.parked, redriven: w.redrivenCount, groups: w.groupCount, breaker: w.breaker}
	w.send = newSender(produce, r.rules.Encode)
	w.walk = &walk{loopState: w.loopState, clients: w.clients, route: r, log: w.log, clock: e.clock, redrivenCount: w.redrivenCount, groupCount: w.groupCount,
		health: w.health, parts: w.parts, throttle: w.throttle, hdrWarn: w.hdrWarn, sources: w.sources, headroom: w.headroom,
		topics: w.topics, send: w.send, park: w.park, claims: w.claims, breaker: w.breaker}
	w.runner = &runner{loopState: w.loopState, route: r, log: w.log, clock: e.clock, store: e.store, metrics: e.metrics,
		instanceID: e.instanceID, consumer: w.consumer, paused: &w.requests.paused, health: w.health, topicsOK: w.topicsOK,
		parts: w.parts, throttle: w.throttle, sources: w.sources, park: w.park, ledger: w.ledger, claims: w.claims, breaker: w.breaker}
	if exactlyOnce {
		w.txn = newTxn(w)
		w.walk.txn, w.runner.txn = w.txn, w.txn
	}
	return w, nil
}

// loop is the worker goroutine: it polls until stop delivers Stop's context, then drains
// within that context's deadline and closes.
func (w *worker) loop(ctx context.Context, stop <-chan context.Context, done chan<- error) {
	// The loop's services: the parker's storers and the ledger's position writer and
	// flusher. They stop after the shutdown, which still hands them work; their work ends
	// with ctx too. New ones are never started twice.
	_ = w.park.Start(ctx)
	_ = w.ledger.Start(ctx)
	stopServices := func() { // they return as soon as they are cancelled
		_ = w.park.Stop(context.Background())
		_ = w.ledger.Stop(context.Background())
	}
	_ = w.send.Start(ctx)
	var err error
	for w.fatal == nil {
		select {
		case sctx := <-stop:
			err = w.shutdown(sctx)
			stopServices()
			done <- err
			return
		case reply := <-w.requests.runReq:
			w.runner.startRun(ctx, reply)
		default:
		}
		w.step(ctx)
	}
	if w.identity.fenced(w.fatal) {
		w.health.fenced.Store(w.identity.fencedReason())
		w.log.Error().Err(w.fatal).Str("group", w.route.Group).Str("group_instance_id", w.identity.instance).
			Msg("fenced by a consumer with this route's group.instance.id: stopping without committing unacknowledged records; another worker with this identity keeps it, this worker's own rejoin leaves it")
		err = errors.Join(w.fatal, w.shutdown(ctx))
		stopServices()
		done <- w.judgeFence(ctx, stop, err)
		return
	}
	w.log.Error().Err(w.fatal).Msg("fatal error: stopping without committing unacknowledged records")
	w.onFatal(fmt.Errorf("route %s: %w", w.route.Name, w.fatal))
	err = errors.Join(w.fatal, w.shutdown(ctx))
	stopServices()
	<-stop
	done <- err
}

// judgeFence ends a fenced route's loop (identity.go): a duplicate identity keeps the
// route stopped and not ready until stop; a free one is a fatal error, so the worker
// exits and rejoins. It returns the loop's result once stop came.
func (w *worker) judgeFence(ctx context.Context, stop <-chan context.Context, err error) error {
	vctx, cancel := context.WithCancel(ctx)
	verdict := make(chan error, 1)
	go func() { verdict <- w.identity.heldByAnother(vctx) }()
	select {
	case <-stop:
		cancel()
		<-verdict
		return err
	case dup := <-verdict:
		cancel()
		if dup != nil {
			w.health.fenced.Store(dup.Error())
			w.health.count("identity")
			w.log.Error().Err(dup).Str("group", w.route.Group).Str("group_instance_id", w.identity.instance).
				Msg("two workers share one identity: this route stays stopped and not ready; the worker does not exit, which would fence the other in turn")
			<-stop
			return errors.Join(dup, err)
		}
		w.onFatal(fmt.Errorf("route %s: %w", w.route.Name, w.fatal))
		<-stop
		return err
	}
}

// step is one turn of the loop.
func (w *worker) step(ctx context.Context) {
	defer w.send.flush()
	w.walk.drainDeliveries()
	w.walk.drainStored()
	w.ledger.drainPositions()
	w.park.flush()
	w.walk.retryProduces()
	w.walk.processHeld()
	if w.run != nil {
		w.runner.progressRun(ctx)
	}
	w.headroom.probe(w.parts)
	if w.txn != nil {
		w.txn.progress(w.parts)
	} else {
		w.ledger.storeOffsets(w.parts)
	}
	w.inFlightGauge.Set(float64(w.inFlight))
	if w.throttle.holdPolling() {
		w.waitWork()
		return
	}
	timeout := pollInterval
	if len(w.producer.Events()) > 0 || len(w.redriveReports()) > 0 || len(w.park.out) > 0 || len(w.send.failed) > 0 {
		timeout = 0
	}
	// Records that are ready are taken in a burst: the rest of a turn costs as much as a
	// record, and acknowledgements wait in the producer's channel meanwhile. Then, every
	// turn (rebalances wait for it, and librdkafka counts it against
	// max.poll.interval.ms), the consumer's own queue: its events, and the records of any
	// partition librdkafka did not route to ours (kafkafast.Queue). On read_path poll,
	// the consumer's own queue has the records too.
	if w.records != nil {
		w.burst(func(wait time.Duration) kafka.Event { return w.records.Next(wait) }, timeout)
		timeout = 0
	}
	if w.fatal == nil {
		w.burst(func(wait time.Duration) kafka.Event { return w.consumer.Poll(int(wait / time.Millisecond)) }, timeout)
	}
}

// burst handles what next returns, waiting up to timeout for the first, until next has
// nothing ready or the loop must turn (a burst is full, the throttle is on, a fatal
// error).
func (w *worker) burst(next func(time.Duration) kafka.Event, timeout time.Duration) {
	ev := next(timeout)
	for n := 1; ev != nil; n++ {
		w.handle(ev)
		if n == pollBurst || w.throttle.on || w.fatal != nil {
			return
		}
		ev = next(0)
	}
}

// waitWork waits for an acknowledgement, a stored batch or the poll interval, whichever
// comes first: the loop's pause when it does not poll the consumer.
func (w *worker) waitWork() {
	t := time.NewTimer(pollInterval)
	defer t.Stop()
	select {
	case ev := <-w.producer.Events():
		w.walk.onDelivery(ev)
	case ev := <-w.redriveReports():
		w.walk.onDelivery(ev)
	case b := <-w.park.out:
		w.walk.onStored(b)
	case f := <-w.send.failed:
		w.walk.onProduceFailure(f.o, f.err)
	case b := <-w.ledger.posOut: // a position landed: the window past the ledger widens
		w.ledger.onPositions(b)
	case b := <-w.ledger.flushOut: // positions flushed: they may be committed
		w.ledger.onFlushed(b)
	case w.send.input() <- w.send.queued:
		w.send.handed()
	case <-t.C:
	}
}

func (w *worker) handle(ev kafka.Event) {
	switch ev := ev.(type) {
	case nil:
	case *kafka.Message:
		w.walk.onMessage(ev)
	case kafka.PartitionEOF:
		if p := w.parts.of(kafka.TopicPartition(ev)); p != nil && p.reading && int64(ev.Offset) >= p.hw {
			w.parts.stopReading(p)
		}
	case kafka.Error:
		if ev.IsFatal() {
			w.fatal, w.consumerFatal = ev, true
			return
		}
		w.health.noteKafkaError(ev)
		w.health.warnEvery("kafka_consumer", ev, "consumer error (librdkafka retries by itself)")
	case kafka.OffsetsCommitted:
		if ev.Error != nil {
			w.health.warnEvery("commit", ev.Error, "offset commit failed; it is retried with the next commit")
		}
	}
}

// shutdown ends the worker: stop reading, finish in-flight work within ctx, commit, close.
func (w *worker) shutdown(ctx context.Context) error {
	if w.run != nil && !w.run.interrupted {
		w.runner.interruptRun("shutdown")
	}
	for w.fatal == nil && ctx.Err() == nil && (w.run != nil || w.inFlight > 0 || !w.park.idle()) {
		w.step(ctx)
		if w.run != nil && w.run.phase == phaseDue {
			w.run.phase = phaseDrain
		}
	}
	if w.run != nil { // the grace period ran out
		w.run.reply <- errors.New("shutdown before the run finished")
		w.run = nil
	}
	var parts []*partition
	for _, p := range w.parts.byKey {
		parts = append(parts, p)
	}
	var err error
	if w.txn != nil {
		by := time.Now().Add(revokeGrace)
		if dl, ok := ctx.Deadline(); ok {
			by = dl
		}
		w.settleBy(by)
		w.txn.abort() // after a failure: nothing of it becomes visible
	} else if err = w.ledger.commitNow(parts); err != nil {
		w.log.Warn().Err(err).Msg("final commit failed: the records after the last commit will be read again")
	}
	if w.records != nil {
		w.records.Close() // before its consumer: nothing reads records any more
	}
	var cerr error
	if w.consumerFatal {
		// After a fatal consumer error (a static member fenced by a newer one with its
		// group.instance.id) librdkafka refuses to start the consumer close, and
		// confluent-kafka-go v2.11.1's Close waits for it forever (confluent-kafka-go#1588).
		// The handle is left to the process's exit (a duplicate identity keeps the worker
		// running without it).
		w.log.Warn().Msg("the consumer is left open after its fatal error: it cannot be closed, and goes with the process")
	} else {
		cerr = w.consumer.Close() // may revoke, and a revocation drains through the sender
	}
	w.sources.f.close()
	_ = w.send.Stop(context.Background()) // it returns as soon as it is cancelled
	deadline := time.Now().Add(5 * time.Second)
	if dl, ok := ctx.Deadline(); ok {
		deadline = dl
	}
	// Flush counts events nobody reads any more as outstanding, and its own poll blocks
	// while the events channel is full: drain them (nothing is committed after this).
	var drained sync.WaitGroup
	for _, events := range []chan kafka.Event{w.producer.Events(), w.redriveReports()} {
		if events != nil {
			drained.Go(func() {
				for range events { // closed by Close
				}
			})
		}
	}
	left := w.producer.Flush(max(0, int(time.Until(deadline)/time.Millisecond)))
	if w.fast != nil {
		left += w.fast.Flush(max(0, int(time.Until(deadline)/time.Millisecond)))
		w.fast.Close()
	}
	if w.tx != nil {
		left += w.tx.Flush(max(0, int(time.Until(deadline)/time.Millisecond)))
		w.tx.Close()
	}
	if left > 0 {
		w.log.Warn().Int("records", left).Msg("records still unacknowledged at shutdown: they stay uncommitted in the DLQ")
	}
	w.producer.Close()
	drained.Wait() // ends with Close: nothing of the worker outlives its loop
	return cerr
}
