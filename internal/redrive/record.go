// The walk of one DLQ record on the loop goroutine: taken from the consumer, classified,
// then handed to the sender (redrive) or to the parker (schedule, park); and the answers:
// acknowledgements, produce failures and their retries. Everything here runs on the loop.

package redrive

import (
	"fmt"
	"slices"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/dlqops/dlq/internal/delivery"
	"github.com/dlqops/dlq/internal/headers"
	"github.com/dlqops/dlq/internal/kafkafast"
	"github.com/dlqops/dlq/internal/redrive/tracker"
	"github.com/dlqops/dlq/internal/store"
)

// inflight is the Opaque of a produced DLQ record: what a retry or a park needs to
// build it again from the record as read (its envelope is decoded again then).
type inflight struct {
	part   *partition
	src    *kafka.Message
	topic  string
	target int32
	group  string // the consumer group the hop is addressed to (dlq-target-group), "" for all
	label  string // the label of its failing group (groupmetrics.go)
	again  bool   // the record came back after an earlier redrive (breaker.go)
}

// from is the DLQ position the record was read at.
func (o *inflight) from() headers.Coordinates {
	return headers.Coordinates{Topic: o.part.key.topic, Partition: o.part.key.partition, Offset: int64(o.src.TopicPartition.Offset)}
}

type retry struct {
	at time.Time
	o  *inflight
}

// walk takes each DLQ record from the consumer to its end (redriven, scheduled or
// parked) and takes the answers: acknowledgements, produce failures and their retries,
// stored batches. It runs on the loop goroutine, which owns every field; it shares the
// loop's state with the worker and the runner.
type walk struct {
	*loopState
	*clients      // the producer's events and the redrives' reports come back here
	route         route
	log           zerolog.Logger
	clock         func() time.Time
	redrivenCount prometheus.Counter
	groupCount    *groupRedriven

	health   *health
	parts    *partitions
	throttle *throttle
	hdrWarn  *headerWarnings
	sources  *sources
	headroom *headroom
	topics   *delivery.Topics
	send     *sender
	park     *parker
	claims   *claims
	breaker  *breaker
	txn      *txn // txn.go: an exactly_once route's transactions; nil on at_least_once
}

// onMessage takes one DLQ record from the consumer.
func (w *walk) onMessage(m *kafka.Message) {
	w.health.kafkaUp()
	p := w.parts.of(m.TopicPartition)
	if p == nil || !p.reading || int64(m.TopicPartition.Offset) >= p.hw || w.throttle.held != nil {
		// Not ours to process now (a message fetched just before a pause): rewind so that
		// the next run reads it again.
		w.parts.rewind(m)
		if p != nil && p.reading && int64(m.TopicPartition.Offset) >= p.hw {
			w.parts.stopReading(p)
		}
		return
	}
	if p.trk != nil && int64(m.TopicPartition.Offset) < p.trk.Next() {
		w.readAgain(p, m)
		return
	}
	if p.trk == nil {
		p.trk = tracker.New(int64(m.TopicPartition.Offset))
		p.from = p.trk.Watermark()
	}
	if int64(m.TopicPartition.Offset)+1 >= p.hw {
		w.parts.stopReading(p)
	}
	if !w.throttle.admit(p, int64(m.TopicPartition.Offset), w.inFlight) {
		w.throttle.hold(m)
		return
	}
	w.process(p, m)
}

// readAgain skips m, a record this life already took (redriven, stored or in flight):
// librdkafka's fetch position went back behind the worker's. The partition fetches on
// from the next offset the worker expects; the records in between, already queued, are
// dropped by librdkafka with the seek. Nothing is sent twice and nothing is skipped that
// was not taken (TestRunSkipsRecordsTheConsumerHandsOutAgain).
func (w *walk) readAgain(p *partition, m *kafka.Message) {
	w.health.count("read_again")
	p.log(w.log).Warn().Int64("offset", int64(m.TopicPartition.Offset)).Int64("next_offset", p.trk.Next()).
		Msg("the consumer handed out a record this worker already took; skipped, fetching on from the next offset")
	w.parts.seekNext([]*partition{p})
}

// processHeld processes the record the throttle held, once it may start.
func (w *walk) processHeld() {
	m := w.throttle.takeHeld(w.inFlight)
	if m == nil {
		return
	}
	if p := w.parts.of(m.TopicPartition); p != nil && !p.gone {
		w.process(p, m)
	} // else revoked meanwhile: the new owner reads it
}

// process classifies and dispatches one admitted record.
func (w *walk) process(p *partition, m *kafka.Message) {
	now := w.clock()
	from := headers.Coordinates{Topic: p.key.topic, Partition: p.key.partition, Offset: int64(m.TopicPartition.Offset)}
	dec := headers.DecodeOf(m.Headers)
	warnings := dec.Warnings
	if isPointer(dec) {
		// The source record's warnings are this record's: noted with the pointer's, once.
		var src []headers.Warning
		m, dec, src = w.resolvePointer(p, m, dec)
		warnings = slices.Concat(warnings, src)
	}
	if len(warnings) > 0 {
		w.hdrWarn.note(from, warnings)
	}
	if m == nil {
		return // parked (source_unavailable, invalid_retry_count), or stalled and read again later
	}
	// The cause matters to the breaker for a return, a sampled first redrive, and while it
	// holds a cause apart (breaker_cause.go).
	sample := dec.Envelope.RedriveID == nil && w.breaker.sampleCause()
	cause := ""
	if dec.Envelope.RedriveID != nil || sample || w.breaker.holdsCauses() {
		cause = causeOf(dec.Envelope.ErrorClass, dec.Envelope.ErrorMessage, dec.Envelope.OriginalTopic)
	}
	if prev := dec.Envelope.RedriveID; prev != nil {
		w.breaker.returned(*prev, cause, now)
	}
	d := w.route.classify(dec, from, m.Timestamp, now)
	if d.act == actRedrive && !w.breaker.allow(from, cause, now) {
		// The breaker is open: the record waits in PostgreSQL, its retry count untouched.
		d = decision{act: actSchedule, reason: store.ReasonBackoff, due: w.breaker.holdUntil(cause, now)}
	}
	if sample && d.act == actRedrive {
		w.breaker.sent(cause, now)
	}
	if d.act == actRedrive {
		target, ok, err := w.topics.Partition(d.to.Topic, originalPartition(d.to.Topic, dec.Envelope), m.Key)
		switch {
		case err != nil:
			// The cluster does not answer: stall this partition, read the record again later.
			w.health.stall("metadata", err, "cannot look up the original topic; partition stalled")
			w.parts.rewind(m)
			p.reading = false
			w.requeueRead(p)
			return
		case !ok:
			d = decision{act: actPark, reason: store.ReasonUnknownTopic, detail: "topic " + d.to.Topic + " does not exist"}
		default:
			if w.txn != nil {
				if err := w.txn.begin(); err != nil {
					w.fatal = err
					return
				}
			}
			mustAdd(p, m)
			w.inFlight++
			o := &inflight{part: p, src: m, topic: d.to.Topic, target: target, group: d.to.Group,
				label: w.groupCount.label(dec.Envelope.Group), again: dec.Envelope.RedriveID != nil}
			w.send.queue(sendJob{o: o, env: dec.Envelope, now: now})
			return
		}
	}
	mustAdd(p, m)
	w.inFlight++
	w.park.enqueue(p, m, dec.Envelope, d)
}

// originalPartition is the partition a redrive to topic keeps: the original one on the
// original topic, none (by key) on another, a group's own topic among them.
func originalPartition(topic string, e headers.Envelope) int32 {
	if topic == e.OriginalTopic {
		return e.OriginalPartition
	}
	return -1
}

func mustAdd(p *partition, m *kafka.Message) {
	if err := p.trk.Add(int64(m.TopicPartition.Offset)); err != nil {
		panic(err) // the consumer hands out increasing offsets; anything else is our bug
	}
}

// requeueRead makes a stalled partition part of the run again after the stall backoff.
func (w *walk) requeueRead(p *partition) {
	if w.run != nil {
		w.run.stalledParts = append(w.run.stalledParts, stalledPart{p: p, at: time.Now().Add(w.health.backoffNow())})
	}
}

// drainDeliveries takes the produce acknowledgements waiting on the producer's channel
// and the records the sender could not produce.
func (w *walk) drainDeliveries() {
	for {
		select {
		case ev := <-w.producer.Events():
			w.onDelivery(ev)
		case ev := <-w.redriveReports():
			w.onDelivery(ev)
		case f := <-w.send.failed:
			w.onProduceFailure(f.o, f.err)
		default:
			return
		}
	}
}

func (w *walk) onDelivery(ev kafka.Event) {
	switch ev := ev.(type) {
	case *kafka.Message:
		switch o := ev.Opaque.(type) {
		case *inflight:
			w.onRedriveAck(o, ev)
		case *claimed:
			w.onClaimAck(o, ev)
		default: // acknowledging a guess could commit a record never delivered
			w.fatal = fmt.Errorf("delivery: a delivery report for %v of no record in flight (opaque %T)", ev.TopicPartition, ev.Opaque)
		}
	case kafkafast.UnknownReport:
		w.fatal = fmt.Errorf("delivery: %v", ev)
	case kafka.Error:
		if ev.IsFatal() {
			w.fatal = ev
			return
		}
		w.health.noteKafkaError(ev)
		w.health.warnEvery("kafka_producer", ev, "producer error (librdkafka retries by itself)")
	}
}

func (w *walk) onRedriveAck(o *inflight, ack *kafka.Message) {
	err := ack.TopicPartition.Error
	if err == nil {
		w.health.kafkaUp()
		w.inFlight--
		if o.part.gone {
			return
		}
		o.part.trk.Done(int64(o.src.TopicPartition.Offset))
		o.part.counts.redriven++
		w.redrivenCount.Inc()
		w.groupCount.inc(o.label)
		w.breaker.redriven(o.from(), o.again, w.clock())
		w.health.unstall()
		return
	}
	if w.txn != nil {
		// The broker refused a record of the transaction: it can only abort.
		w.txn.fail(fmt.Errorf("redrive of %s/%d@%d to %s: %w", o.part.key.topic, o.part.key.partition, o.src.TopicPartition.Offset, o.topic, err))
		return
	}
	w.onProduceFailure(o, err)
}

// onProduceFailure handles a redriven record that Produce refused or whose delivery
// failed: park it, retry it after a backoff, or stop the worker.
func (w *walk) onProduceFailure(o *inflight, err error) {
	switch class, reason := delivery.Classify(err); class {
	case delivery.Fatal:
		w.fatal = err
	case delivery.Permanent:
		w.breaker.settled(o.from())
		w.park.enqueue(o.part, o.src, headers.DecodeOf(o.src.Headers).Envelope, decision{act: actPark, reason: reason, detail: err.Error()})
	default:
		// Built again from the record as read: a failed acknowledgement carries no key,
		// value or headers (delivery.ProducerConfig: go.delivery.report.fields is none).
		o.part.counts.errors++
		w.retries = append(w.retries, retry{at: time.Now().Add(w.health.stall("produce", err, "produce failed; retrying after a backoff")), o: o})
	}
}

// retryProduces sends again the records whose transient failure backoff elapsed.
func (w *walk) retryProduces() {
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
		w.send.queue(sendJob{o: r.o, env: headers.DecodeOf(r.o.src.Headers).Envelope, now: w.clock()})
	}
	w.retries = kept
}

// drainStored takes the batches the parker stored.
func (w *walk) drainStored() {
	for {
		select {
		case b := <-w.park.out:
			w.onStored(b)
		default:
			w.throttle.release(w.inFlight)
			return
		}
	}
}

func (w *walk) onStored(b *storeBatch) { w.inFlight -= w.park.done(b) }
