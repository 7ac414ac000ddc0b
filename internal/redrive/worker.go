package redrive

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"golang.org/x/time/rate"

	"github.com/dlqops/dlq/internal/delivery"
	"github.com/dlqops/dlq/internal/headers"
	"github.com/dlqops/dlq/internal/kafkaclient"
	"github.com/dlqops/dlq/internal/redrive/routes"
	"github.com/dlqops/dlq/internal/redrive/tracker"
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
	stallBase      = 200 * time.Millisecond
	stallCap       = 30 * time.Second
	commitInterval = 250 * time.Millisecond // acknowledged, uncommitted work is what a crash sends again
	wakeTimeout    = time.Second            // see wakeFetcher
	// Batches are stored by a few goroutines at once, each batch capped, so the COPYs of
	// consecutive batches overlap instead of one large COPY at a time holding the loop
	// back. Each storer holds one pooled connection while it writes.
	storers       = 3
	storeBatchMax = 2000
)

type partKey struct {
	topic     string
	partition int32
}

// partition is the state of one assigned DLQ partition, owned by the loop goroutine.
type partition struct {
	key    partKey
	trk    *tracker.Partition // nil until the start offset is known
	stored int64              // last watermark handed to StoreOffsets
	// ledgered is the ledger's position: nothing is stored for commit above it; -1 unknown.
	ledgered int64
	checked  int64 // highest committed offset already checked against the ledger
	gone     bool  // revoked: late acknowledgements are ignored
	reading  bool  // in the current run and below its high watermark
	paused   bool
	hw       int64 // high watermark snapshot of the current run
	from     int64 // watermark when the current run started on it
	counts   counts
}

type counts struct {
	redriven, scheduled, parked, errors int64
	ledgerDone                          bool // this run's ledger row is written
}

func (p *partition) log(l zerolog.Logger) *zerolog.Logger {
	l = l.With().Str("topic", p.key.topic).Int32("partition", p.key.partition).Logger()
	return &l
}

// inflight is the Opaque of a produced DLQ record: what a retry or a park needs to
// build it again from the record as read (its envelope is decoded again then).
type inflight struct {
	part   *partition
	src    *kafka.Message
	topic  string
	target int32
}

// parkItem is a record on its way to PostgreSQL.
type parkItem struct {
	part   *partition
	offset int64
	rec    store.NewRecord
}

type storeBatch struct {
	items []parkItem
	err   error // set when the storer gave up (shutdown)
}

// worker runs one route: a consumer always subscribed to the route's DLQ topics (paused
// between runs), a producer fed by a sender goroutine, and storer goroutines for
// PostgreSQL writes. Everything else runs on the loop goroutine, which owns all partition
// state.
type worker struct {
	route route
	e     *Engine
	log   zerolog.Logger

	consumer *kafka.Consumer
	producer *kafka.Producer
	limiter  *rate.Limiter // nil when unlimited

	// The route's series of the per-record metrics, looked up once.
	inFlightGauge prometheus.Gauge
	redrivenCount prometheus.Counter

	runReq  chan chan error
	runMu   sync.Mutex // held while a run is requested or running
	running atomic.Bool
	paused  atomic.Bool
	stalled atomic.Value // string: why the route cannot progress, "" when fine
	// kafkaDown is set when librdkafka reports every broker down and cleared when a
	// record comes or is acknowledged, or when Ready's probe gets an answer (an idle
	// worker sees no record to tell it the cluster is back).
	kafkaDown atomic.Bool
	storeIn   chan *storeBatch
	storeOut  chan *storeBatch

	parts      map[partKey]*partition
	run        *runState
	batch      []parkItem
	storing    int // batches handed to the storer and not back
	held       *kafka.Message
	throttled  bool      // not taking records until in-flight work drains
	throttleAt time.Time // when the throttle began
	throttleP  bool      // the throttle outlasted throttleHold and paused the reading partitions
	inFlight   int
	topics     *delivery.Topics
	claimEnc   delivery.Encoder // builds scheduled records on the loop; the sender has its own
	retries    []retry          // produces waiting for a backoff
	send       *sender
	fetch      *fetcher // reads the source records of share groups' dead letters; nil until needed
	// headroomAt is the next probe of the oldest share-group pointer; headroomSeries the
	// source partitions it set a gauge for; headroomOff: no probe until a pointer is
	// resolved (see probeHeadroom).
	headroomAt     time.Time
	headroomSeries map[partKey]bool
	headroomOff    bool
	sendQ          []sendJob // redriven records not handed to the sender yet
	stallN         int       // consecutive transient failures, for the stall backoff
	lastWarn       map[string]time.Time
	hdrWarn        headerWarnLog
	fatal          error
	lastCommit     time.Time
	// The position writer's input and output (one batch at a time: posBusy), and the
	// positions an assignment learned, written at its end.
	posIn   chan *positionBatch
	posOut  chan *positionBatch
	posBusy bool
	// committedOnce: this life committed its first range (see storeLedgered).
	committedOnce bool
	adopt         []store.Coordinates
	touchedAt     time.Time // last touchPositions; zero after an assignment
	// topicsOK caches whether the route's topics exist, for readiness and run outcomes.
	topicsOK topicCheck
}

type retry struct {
	at time.Time
	o  *inflight
}

func newWorker(e *Engine, rc routes.Config) (*worker, error) {
	r := compileRoute(rc)
	w := &worker{
		route:          r,
		e:              e,
		log:            e.log.With().Str("route", r.Name).Logger(),
		runReq:         make(chan chan error),
		storeIn:        make(chan *storeBatch),
		storeOut:       make(chan *storeBatch, storers),
		parts:          map[partKey]*partition{},
		lastWarn:       map[string]time.Time{},
		headroomSeries: map[partKey]bool{},
		posIn:          make(chan *positionBatch, 1),
		posOut:         make(chan *positionBatch, 1),
	}
	w.stalled.Store("")
	w.inFlightGauge = e.metrics.inFlight.WithLabelValues(r.Name)
	w.redrivenCount = e.metrics.redriven.WithLabelValues(r.Name)
	if r.RateLimit > 0 {
		w.limiter = rate.NewLimiter(rate.Limit(r.RateLimit), max(1, int(r.RateLimit)))
	}
	cc := kafkaclient.ConsumerConfig(e.kafka, r.Group)
	// Offsets are stored only up to the tracker's watermark (enable.auto.offset.store is
	// off); librdkafka commits what is stored every second, on revoke and on close.
	cc["enable.auto.commit"] = true
	cc["auto.commit.interval.ms"] = int(commitInterval / time.Millisecond)
	cc["enable.partition.eof"] = true // a run ends at end of log even when markers hide the last offset
	cc["client.id"] = e.instanceID
	if e.groupInst != "" {
		cc["group.instance.id"] = e.groupInst + "." + r.Name
	}
	pc := delivery.ProducerConfig(e.kafka)
	pc["go.delivery.report.fields"] = "none"
	pc["client.id"] = e.instanceID
	kafkaclient.PipeQueues(cc, pc, r.MaxInFlight)
	var err error
	if w.consumer, err = kafka.NewConsumer(&cc); err != nil {
		return nil, fmt.Errorf("route %s: consumer: %w", r.Name, err)
	}
	if w.producer, err = kafka.NewProducer(&pc); err != nil {
		w.consumer.Close()
		return nil, fmt.Errorf("route %s: producer: %w", r.Name, err)
	}
	w.topics = delivery.NewTopics(w.producer, metadataTTL, callTimeout)
	w.send = newSender(w.producer, r.rules.Encode)
	return w, nil
}

// warnEvery logs at most once per interval per kind, so an outage gives clear, bounded logs.
func (w *worker) warnEvery(kind string, err error, msg string) {
	now := time.Now()
	if now.Sub(w.lastWarn[kind]) < 10*time.Second {
		return
	}
	w.lastWarn[kind] = now
	w.log.Warn().Err(err).Str("kind", kind).Msg(msg)
}

// stall records a transient failure and returns how long to back off.
func (w *worker) stall(kind string, err error, msg string) time.Duration {
	w.stallN++
	w.stalled.Store(kind + ": " + err.Error())
	w.e.metrics.errors.WithLabelValues(w.route.Name, kind).Inc()
	w.warnEvery(kind, err, msg)
	return stallDelay(w.stallN)
}

// stallDelay is the backoff after n consecutive transient failures: stallBase doubling
// per failure, capped at stallCap. Every stall waits by it.
func stallDelay(n int) time.Duration {
	return min(stallBase<<min(n, 8), stallCap)
}

func (w *worker) unstall() {
	if w.stallN > 0 {
		w.stallN = 0
		w.stalled.Store("")
		w.log.Info().Msg("recovered")
	}
}

// loop is the worker goroutine: it polls until stop delivers Stop's context, then drains
// within that context's deadline and closes.
func (w *worker) loop(ctx context.Context, stop <-chan context.Context, done chan<- error) {
	var storersWG sync.WaitGroup
	storerCtx, cancelStorer := context.WithCancel(ctx)
	for range storers {
		storersWG.Go(func() { w.storer(storerCtx) })
	}
	storersWG.Go(func() { w.positionWriter(storerCtx) })
	w.send.start()
	var err error
	for w.fatal == nil {
		select {
		case sctx := <-stop:
			err = w.shutdown(sctx)
			cancelStorer()
			storersWG.Wait()
			done <- err
			return
		case reply := <-w.runReq:
			w.startRun(ctx, reply)
		default:
		}
		w.step(ctx)
	}
	w.log.Error().Err(w.fatal).Msg("fatal error: stopping without committing unacknowledged records")
	w.e.fatal(fmt.Errorf("route %s: %w", w.route.Name, w.fatal))
	err = errors.Join(w.fatal, w.shutdown(ctx))
	cancelStorer()
	storersWG.Wait()
	<-stop
	done <- err
}

// step is one turn of the loop.
func (w *worker) step(ctx context.Context) {
	defer w.flushSends()
	w.drainDeliveries()
	w.drainStored()
	w.drainPositions()
	w.flushBatch()
	w.retryProduces()
	w.processHeld()
	if w.run != nil {
		w.progressRun(ctx)
	}
	w.probeHeadroom()
	w.storeOffsets()
	w.inFlightGauge.Set(float64(w.inFlight))
	if w.holdPolling() {
		w.waitWork()
		return
	}
	timeout := pollInterval
	if len(w.producer.Events()) > 0 || len(w.storeOut) > 0 || len(w.send.failed) > 0 {
		timeout = 0
	}
	// Records that are ready are taken in a burst: the rest of a turn costs as much as a
	// record, and acknowledgements wait in the producer's channel meanwhile.
	ev := w.consumer.Poll(int(timeout / time.Millisecond))
	for n := 1; ev != nil; n++ {
		w.handle(ev)
		if n == pollBurst || w.throttled || w.fatal != nil {
			return
		}
		ev = w.consumer.Poll(0)
	}
}

// waitWork waits for an acknowledgement, a stored batch or the poll interval, whichever
// comes first: the loop's pause when it does not poll the consumer.
func (w *worker) waitWork() {
	t := time.NewTimer(pollInterval)
	defer t.Stop()
	select {
	case ev := <-w.producer.Events():
		w.onDelivery(ev)
	case b := <-w.storeOut:
		w.onStored(b)
	case f := <-w.send.failed:
		w.onProduceFailure(f.o, f.err)
	case w.sendIn() <- w.sendQ:
		w.sendQ = nil
	case <-t.C:
	}
}

func (w *worker) handle(ev kafka.Event) {
	switch ev := ev.(type) {
	case nil:
	case *kafka.Message:
		w.onMessage(ev)
	case kafka.PartitionEOF:
		if p := w.parts[partKey{*ev.Topic, ev.Partition}]; p != nil && p.reading && int64(ev.Offset) >= p.hw {
			w.stopReading(p)
		}
	case kafka.Error:
		if ev.IsFatal() {
			w.fatal = ev
			return
		}
		w.noteKafkaError(ev)
		w.warnEvery("kafka_consumer", ev, "consumer error (librdkafka retries by itself)")
	case kafka.OffsetsCommitted:
		if ev.Error != nil {
			w.warnEvery("commit", ev.Error, "offset commit failed; it is retried with the next commit")
		}
	}
}

// noteKafkaError makes the route not ready while no broker answers: librdkafka retries
// in-flight produces and fetches by itself, so no call of ours fails to say so.
func (w *worker) noteKafkaError(err kafka.Error) {
	if err.Code() == kafka.ErrAllBrokersDown {
		w.kafkaDown.Store(true)
	}
}

// kafkaUp clears kafkaDown; it runs on the loop, the only goroutine that sets it, so it
// reads first and spares every record an atomic write.
func (w *worker) kafkaUp() {
	if w.kafkaDown.Load() {
		w.kafkaDown.Store(false)
	}
}

// kafkaReady is the readiness of the route's Kafka side; it runs outside the loop.
func (w *worker) kafkaReady(ctx context.Context) error {
	if !w.kafkaDown.Load() {
		return nil
	}
	timeout := 2 * time.Second
	if dl, ok := ctx.Deadline(); ok {
		timeout = max(time.Millisecond, time.Until(dl))
	}
	if _, err := w.producer.GetMetadata(nil, false, int(timeout/time.Millisecond)); err != nil {
		return fmt.Errorf("kafka: all brokers down: %w", err)
	}
	w.kafkaDown.Store(false)
	return nil
}

// onMessage takes one DLQ record from the consumer.
func (w *worker) onMessage(m *kafka.Message) {
	w.kafkaUp()
	p := w.parts[partKey{*m.TopicPartition.Topic, m.TopicPartition.Partition}]
	if p == nil || !p.reading || int64(m.TopicPartition.Offset) >= p.hw || w.held != nil {
		// Not ours to process now (a message fetched just before a pause): rewind so that
		// the next run reads it again.
		w.rewind(m)
		if p != nil && p.reading && int64(m.TopicPartition.Offset) >= p.hw {
			w.stopReading(p)
		}
		return
	}
	if p.trk == nil {
		p.trk = tracker.New(int64(m.TopicPartition.Offset))
		p.from = p.trk.Watermark()
	}
	if int64(m.TopicPartition.Offset)+1 >= p.hw {
		w.stopReading(p)
	}
	if !w.admit() {
		w.held = m
		w.throttle()
		return
	}
	w.process(p, m)
}

// admit reports whether one more record may start now (in-flight bound, rate limit).
func (w *worker) admit() bool {
	if w.inFlight >= w.route.MaxInFlight {
		return false
	}
	return w.limiter == nil || w.limiter.Allow()
}

func (w *worker) processHeld() {
	if w.held == nil || !w.admit() {
		return
	}
	m := w.held
	w.held = nil
	p := w.parts[partKey{*m.TopicPartition.Topic, m.TopicPartition.Partition}]
	if p == nil || p.gone {
		return // revoked meanwhile: the new owner reads it
	}
	w.process(p, m)
}

// throttle stops taking records until in-flight work drains. At first the loop just stops
// polling: librdkafka's bounded read-ahead queue fills and holds the fetcher back, and it
// is still there when the loop takes records again. A Pause drops that queue, which has
// to be fetched again after Resume.
func (w *worker) throttle() {
	if w.throttled {
		return
	}
	w.throttled, w.throttleAt = true, time.Now()
}

// holdPolling reports whether the loop skips polling the consumer this turn. A throttle
// that outlasts throttleHold (PostgreSQL or the broker down) pauses the reading partitions
// and polls again, so rebalances are served and max.poll.interval.ms is never exceeded;
// librdkafka resumes each partition right after the last record it handed us.
func (w *worker) holdPolling() bool {
	if !w.throttled || w.throttleP {
		return false
	}
	if time.Since(w.throttleAt) < throttleHold {
		return true
	}
	w.throttleP = true
	w.setPaused(w.readingParts(), true)
	return false
}

func (w *worker) unthrottle() {
	if !w.throttled || w.held != nil {
		return
	}
	if w.throttleP {
		if w.inFlight > w.route.MaxInFlight/2 {
			return // half drained first, so a slow store does not pause and resume per record
		}
		w.setPaused(w.readingParts(), false)
	}
	w.throttled, w.throttleP = false, false
}

func (w *worker) anyReading() bool {
	for _, p := range w.parts {
		if p.reading {
			return true
		}
	}
	return false
}

func (w *worker) readingParts() []*partition {
	var out []*partition
	for _, p := range w.parts {
		if p.reading {
			out = append(out, p)
		}
	}
	return out
}

func (w *worker) setPaused(ps []*partition, pause bool) {
	var tps []kafka.TopicPartition
	for _, p := range ps {
		if p.paused != pause {
			p.paused = pause
			tps = append(tps, kafka.TopicPartition{Topic: &p.key.topic, Partition: p.key.partition})
		}
	}
	if len(tps) == 0 {
		return
	}
	var err error
	if pause {
		err = w.consumer.Pause(tps)
	} else {
		err = w.consumer.Resume(tps)
	}
	if err != nil {
		w.log.Error().Err(err).Bool("pause", pause).Msg("pause/resume failed")
		return
	}
	if !pause {
		w.wakeFetcher(tps)
	}
}

// wakeFetcher makes the consumer fetch resumed partitions now. librdkafka's Resume does
// not wake the broker thread that fetches them, which sleeps up to a second while none of
// its partitions is fetchable (confluent-kafka-go#630), so every run and every throttle
// lifted started a second late. A request to each partition's leader (its watermarks,
// answered at once) wakes those threads, and the first fetch leaves with its answer, which
// is not needed. Waiting longer than librdkafka's own one-second wakeup would be useless.
func (w *worker) wakeFetcher(tps []kafka.TopicPartition) {
	for _, tp := range tps {
		if _, _, err := w.consumer.QueryWatermarkOffsets(*tp.Topic, tp.Partition, int(wakeTimeout/time.Millisecond)); err != nil {
			w.log.Debug().Err(err).Msg("fetcher wake-up request failed; librdkafka fetches within a second anyway")
			return
		}
	}
}

func (w *worker) stopReading(p *partition) {
	p.reading = false
	w.setPaused([]*partition{p}, true)
}

func (w *worker) rewind(m *kafka.Message) {
	if p := w.parts[partKey{*m.TopicPartition.Topic, m.TopicPartition.Partition}]; p != nil {
		w.setPaused([]*partition{p}, true)
		if p.trk != nil && int64(m.TopicPartition.Offset) < p.trk.Next() {
			return // fetched before a restart moved the partition on: already behind it
		}
	}
	if err := w.consumer.Seek(m.TopicPartition, 0); err != nil {
		w.log.Error().Err(err).Str("topic", *m.TopicPartition.Topic).Int32("partition", m.TopicPartition.Partition).
			Int64("offset", int64(m.TopicPartition.Offset)).Msg("rewind failed")
	}
}

// process classifies and dispatches one admitted record.
func (w *worker) process(p *partition, m *kafka.Message) {
	now := w.e.clock()
	from := headers.Coordinates{Topic: p.key.topic, Partition: p.key.partition, Offset: int64(m.TopicPartition.Offset)}
	dec := headers.DecodeOf(m.Headers)
	if len(dec.Warnings) > 0 {
		w.noteHeaderWarnings(from, dec.Warnings)
	}
	if isPointer(dec) {
		if m, dec = w.resolvePointer(p, m, dec); m == nil {
			return // parked source_unavailable, or stalled and read again later
		}
	}
	d := w.route.classify(dec, from, m.Timestamp, now)
	if d.act == actRedrive {
		target, ok, err := w.topics.Partition(dec.Envelope.OriginalTopic, dec.Envelope.OriginalPartition, m.Key)
		switch {
		case err != nil:
			// The cluster does not answer: stall this partition, read the record again later.
			w.stall("metadata", err, "cannot look up the original topic; partition stalled")
			w.rewind(m)
			p.reading = false
			w.requeueRead(p)
			return
		case !ok:
			d = decision{act: actPark, reason: store.ReasonUnknownTopic, detail: "topic " + dec.Envelope.OriginalTopic + " does not exist"}
		default:
			mustAdd(p, m)
			w.inFlight++
			o := &inflight{part: p, src: m, topic: dec.Envelope.OriginalTopic, target: target}
			w.sendQ = append(w.sendQ, sendJob{o: o, env: dec.Envelope, now: now})
			return
		}
	}
	mustAdd(p, m)
	w.inFlight++
	w.enqueueStore(p, m, dec.Envelope, d)
}

// flushSends hands the queued redriven records to the sender unless it is still busy
// with earlier ones; they wait for the next turn then.
func (w *worker) flushSends() {
	select {
	case w.sendIn() <- w.sendQ:
		w.sendQ = nil
	default:
	}
}

// sendIn is the sender's input when records wait for it, else nil (a select case that is
// never ready), for the loop's waits.
func (w *worker) sendIn() chan<- []sendJob {
	if len(w.sendQ) == 0 {
		return nil
	}
	return w.send.in
}

// requeueRead makes a stalled partition part of the run again after the stall backoff.
func (w *worker) requeueRead(p *partition) {
	if w.run != nil {
		w.run.stalledParts = append(w.run.stalledParts, stalledPart{p: p, at: time.Now().Add(stallDelay(w.stallN))})
	}
}

func mustAdd(p *partition, m *kafka.Message) {
	if err := p.trk.Add(int64(m.TopicPartition.Offset)); err != nil {
		panic(err) // the consumer hands out increasing offsets; anything else is our bug
	}
}

func (w *worker) enqueueStore(p *partition, m *kafka.Message, env headers.Envelope, d decision) {
	rec := store.NewRecord{
		DLQ:    store.Coordinates{Topic: p.key.topic, Partition: p.key.partition, Offset: int64(m.TopicPartition.Offset)},
		Origin: store.Origin{Topic: env.OriginalTopic, Partition: env.OriginalPartition, Offset: env.OriginalOffset, Timestamp: env.OriginalTimestamp},
		Key:    m.Key, Value: m.Value, Headers: headers.To[store.Header](m.Headers), Timestamp: m.Timestamp,
		RetryCount: env.RetryCount, ErrorClass: env.ErrorClass, ErrorMessage: env.ErrorMessage,
		Reason: d.reason, Route: w.route.Name, Status: store.StatusParked,
	}
	if d.act == actSchedule {
		rec.Status, rec.DueAt = store.StatusScheduled, d.due
	} else if d.detail != "" && rec.ErrorMessage == "" {
		rec.ErrorMessage = d.detail
	}
	w.batch = append(w.batch, parkItem{part: p, offset: rec.DLQ.Offset, rec: rec})
}

// drainDeliveries takes the produce acknowledgements waiting on the producer's channel
// and the records the sender could not produce.
func (w *worker) drainDeliveries() {
	for {
		select {
		case ev := <-w.producer.Events():
			w.onDelivery(ev)
		case f := <-w.send.failed:
			w.onProduceFailure(f.o, f.err)
		default:
			return
		}
	}
}

func (w *worker) onDelivery(ev kafka.Event) {
	switch ev := ev.(type) {
	case *kafka.Message:
		switch o := ev.Opaque.(type) {
		case *inflight:
			w.onRedriveAck(o, ev)
		case *claimed:
			w.onClaimAck(o, ev)
		}
	case kafka.Error:
		if ev.IsFatal() {
			w.fatal = ev
			return
		}
		w.noteKafkaError(ev)
		w.warnEvery("kafka_producer", ev, "producer error (librdkafka retries by itself)")
	}
}

func (w *worker) onRedriveAck(o *inflight, ack *kafka.Message) {
	err := ack.TopicPartition.Error
	if err == nil {
		w.kafkaUp()
		w.inFlight--
		if o.part.gone {
			return
		}
		o.part.trk.Done(int64(o.src.TopicPartition.Offset))
		o.part.counts.redriven++
		w.redrivenCount.Inc()
		w.unstall()
		return
	}
	w.onProduceFailure(o, err)
}

// onProduceFailure handles a redriven record that Produce refused or whose delivery
// failed: park it, retry it after a backoff, or stop the worker.
func (w *worker) onProduceFailure(o *inflight, err error) {
	switch class, reason := delivery.Classify(err); class {
	case delivery.Fatal:
		w.fatal = err
	case delivery.Permanent:
		w.enqueueStore(o.part, o.src, headers.DecodeOf(o.src.Headers).Envelope, decision{act: actPark, reason: reason, detail: err.Error()})
	default:
		// Built again from the record as read: a failed acknowledgement carries no key,
		// value or headers (go.delivery.report.fields is none).
		o.part.counts.errors++
		w.retries = append(w.retries, retry{at: time.Now().Add(w.stall("produce", err, "produce failed; retrying after a backoff")), o: o})
	}
}

// retryProduces sends again the records whose transient failure backoff elapsed.
func (w *worker) retryProduces() {
	now := time.Now()
	kept := w.retries[:0]
	for _, r := range w.retries {
		if now.Before(r.at) {
			kept = append(kept, r)
			continue
		}
		if r.o.part.gone {
			w.inFlight--
			continue
		}
		w.sendQ = append(w.sendQ, sendJob{o: r.o, env: headers.DecodeOf(r.o.src.Headers).Envelope, now: w.e.clock()})
	}
	w.retries = kept
}

// flushBatch hands the records waiting for PostgreSQL to the free storers, at most
// storeBatchMax per batch. Batches may finish out of order: the trackers commit only
// over a contiguous done prefix.
func (w *worker) flushBatch() {
	for len(w.batch) > 0 {
		n := min(len(w.batch), storeBatchMax)
		select {
		case w.storeIn <- &storeBatch{items: w.batch[:n:n]}:
			w.storing++
			w.batch = w.batch[n:]
		default:
			return
		}
	}
}

// storer writes batches to PostgreSQL, retrying transient failures with a backoff until
// they succeed or the worker stops. Nothing is committed past a record before its row is.
func (w *worker) storer(ctx context.Context) {
	for {
		var b *storeBatch
		select {
		case <-ctx.Done():
			return
		case b = <-w.storeIn:
		}
		recs := make([]store.NewRecord, len(b.items))
		for i := range b.items {
			recs[i] = b.items[i].rec
		}
		var warned time.Time
		for attempt := 0; ; attempt++ {
			cctx, cancel := context.WithTimeout(ctx, callTimeout)
			_, err := w.e.store.StoreBatch(cctx, recs, nil)
			cancel()
			if err == nil {
				break
			}
			if ctx.Err() != nil {
				b.err = ctx.Err()
				break
			}
			w.stalled.Store("postgres: " + err.Error())
			w.e.metrics.errors.WithLabelValues(w.route.Name, "store").Inc()
			// The first failure, then at the backoff's cap: each line names the real cause.
			if time.Since(warned) >= stallCap {
				warned = time.Now()
				w.log.Warn().Err(err).Bool("retriable", store.IsRetriable(err)).Int("records", len(recs)).Int("attempt", attempt+1).
					Msg("cannot store scheduled/parked records; their partitions stall until PostgreSQL answers")
			}
			select {
			case <-ctx.Done():
			case <-time.After(stallDelay(attempt)):
			}
		}
		select {
		case w.storeOut <- b:
		case <-ctx.Done():
			return // the loop has stopped reading storeOut: b stays uncommitted
		}
	}
}

func (w *worker) drainStored() {
	for {
		select {
		case b := <-w.storeOut:
			w.onStored(b)
		default:
			w.unthrottle()
			return
		}
	}
}

func (w *worker) onStored(b *storeBatch) {
	w.storing--
	if b.err != nil {
		return // shutdown: not stored, not done, not committed
	}
	if w.stallN == 0 {
		w.stalled.Store("")
	}
	for _, it := range b.items {
		w.inFlight--
		if it.part.gone || !it.part.trk.Done(it.offset) {
			continue
		}
		if it.rec.Status == store.StatusScheduled {
			it.part.counts.scheduled++
			w.e.metrics.scheduled.WithLabelValues(w.route.Name).Inc()
		} else {
			it.part.counts.parked++
			w.e.metrics.parked.WithLabelValues(w.route.Name, string(it.rec.Reason)).Inc()
		}
	}
}

// commitNow writes the watermarks of ps to the ledger, then stores and synchronously
// commits them (up to the ledger's position when PostgreSQL does not answer).
func (w *worker) commitNow(ps []*partition) error {
	w.ledgerNow(ps)
	var tps []kafka.TopicPartition
	for _, p := range ps {
		if p.trk != nil && min(p.trk.Watermark(), p.ledgered) > 0 {
			p.stored = min(p.trk.Watermark(), p.ledgered)
			tps = append(tps, kafka.TopicPartition{Topic: &p.key.topic, Partition: p.key.partition, Offset: kafka.Offset(p.stored)})
		}
	}
	if len(tps) == 0 {
		return nil
	}
	// Stored too: librdkafka commits its stored offsets on revoke and close, and a stale
	// stored offset would move the committed one back.
	if _, err := w.consumer.StoreOffsets(tps); err != nil {
		return err
	}
	_, err := w.consumer.CommitOffsets(tps)
	var ke kafka.Error
	if errors.As(err, &ke) && ke.Code() == kafka.ErrNoOffset {
		return nil
	}
	return err
}

func partitionLabel(p int32) string { return strconv.FormatInt(int64(p), 10) }
