// The partitions the route holds: assignment and revocation (inside Poll, on the loop),
// pause and resume, rewinds, and the synchronous commit. partition values are owned by the
// loop goroutine; a revoked one is marked gone so that late answers for it are ignored.

package redrive

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/rs/zerolog"

	"github.com/dlqops/dlq/internal/redrive/tracker"
	"github.com/dlqops/dlq/internal/store"
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

func partitionLabel(p int32) string { return strconv.FormatInt(int64(p), 10) }

// rebalance runs inside Poll: assignments are paused until a run, revocations finish or
// abandon in-flight work within a bound and commit exactly what is done.
func (w *worker) rebalance(c *kafka.Consumer, ev kafka.Event) error {
	switch ev := ev.(type) {
	case kafka.AssignedPartitions:
		w.assign(ev.Partitions)
	case kafka.RevokedPartitions:
		w.revoke(ev.Partitions)
	}
	return nil
}

func (w *worker) cooperative() bool { return w.consumer.GetRebalanceProtocol() == "COOPERATIVE" }

func (w *worker) assign(tps []kafka.TopicPartition) {
	committed, err := w.consumer.Committed(tps, int(callTimeout/time.Millisecond))
	if err != nil {
		w.health.warnEvery("committed", err, "cannot read committed offsets; consumption starts where the group left off, unchecked against the ledger")
	}
	ledger, lerr := w.ledgerPositions()
	if lerr != nil {
		w.health.warnEvery("ledger", lerr, "cannot read the ledger positions; offset jumps at this assignment go unchecked")
	}
	var ps, ahead []*partition
	for i, tp := range tps {
		p := &partition{key: partKey{*tp.Topic, tp.Partition}, stored: -1, ledgered: -1}
		if err == nil && lerr == nil {
			if start, ok := w.checkAssigned(p, int64(committed[i].Offset), ledger); ok {
				p.trk, p.stored = tracker.New(start), start
				tps[i].Offset = kafka.Offset(start)
				if start > int64(committed[i].Offset) && start == p.ledgered {
					ahead = append(ahead, p) // resumed at the ledger: committed below
				}
				if _, known := ledger[p.key]; !known {
					w.adopt = append(w.adopt, store.Coordinates{Topic: p.key.topic, Partition: p.key.partition, Offset: start})
					p.ledgered = start
				}
			}
		} else if err == nil && committed[i].Offset >= 0 {
			off := int64(committed[i].Offset)
			p.trk, p.stored = tracker.New(off), off
		}
		w.parts[p.key] = p
		ps = append(ps, p)
	}
	w.saveAdopted()
	w.touchedAt = time.Time{}
	if w.cooperative() {
		err = w.consumer.IncrementalAssign(tps)
	} else {
		err = w.consumer.Assign(tps)
	}
	if err != nil {
		w.log.Error().Err(err).Msg("assign failed")
	} else if err := w.commitNow(ahead); err != nil {
		w.health.warnEvery("commit", err, "cannot commit the ledger's position at assignment; the next commit moves past it")
	}
	w.setPaused(ps, true)
	w.assigned = true
	w.log.Info().Int("partitions", len(tps)).Msg("partitions assigned (paused until a run)")
}

func (w *worker) offsetReset(p *partition, cause string) {
	w.e.metrics.offsetResets.WithLabelValues(w.route.Name, p.key.topic, partitionLabel(p.key.partition), cause).Inc()
}

// revokeGrace bounds how long a revocation waits for in-flight records.
const revokeGrace = 10 * time.Second

func (w *worker) revoke(tps []kafka.TopicPartition) {
	var ps []*partition
	for _, tp := range tps {
		if p := w.parts[partKey{*tp.Topic, tp.Partition}]; p != nil {
			p.reading = false
			ps = append(ps, p)
		}
	}
	lost := w.consumer.AssignmentLost()
	// An eager revocation takes every partition until the group's next assignment; a
	// cooperative one only some, and the worker keeps the rest.
	if lost || !w.cooperative() {
		w.assigned = false
	}
	if lost && w.run != nil {
		w.lostMidRun(ps)
	}
	if !lost {
		w.drainFor(ps, time.Now().Add(revokeGrace))
		if err := w.commitNow(ps); err != nil {
			w.health.warnEvery("commit", err, "commit on revoke failed")
		}
		if w.run != nil {
			cctx, cancel := context.WithTimeout(context.Background(), callTimeout)
			for _, p := range ps {
				if !slices.Contains(w.run.parts, p) {
					continue // not read by this run: nothing of it is this run's to account for
				}
				if err := w.recordLedger(cctx, w.run, p); err != nil {
					w.health.warnEvery("ledger", err, "cannot write the ledger of a revoked partition")
				}
			}
			cancel()
		}
	}
	for _, p := range ps {
		p.gone = true
		delete(w.parts, p.key)
		if w.held != nil && *w.held.TopicPartition.Topic == p.key.topic && w.held.TopicPartition.Partition == p.key.partition {
			w.held = nil
		}
	}
	var err error
	if w.cooperative() {
		err = w.consumer.IncrementalUnassign(tps)
	} else {
		err = w.consumer.Unassign()
	}
	if err != nil {
		w.log.Error().Err(err).Msg("unassign failed")
	}
	w.log.Info().Int("partitions", len(tps)).Msg("partitions revoked")
}

// lostMidRun fails the run when the group took partitions of it away without a handover
// (the session expired: a broker outage or a stall longer than session.timeout.ms). What
// was read and not committed is read again by the next owner, what was not read waits
// for the next run: neither is a success.
func (w *worker) lostMidRun(ps []*partition) {
	r := w.run
	for _, p := range ps {
		if !slices.Contains(r.parts, p) {
			continue
		}
		r.unread = append(r.unread, fmt.Sprintf("%s/%d: revoked: assignment lost (group session expired)", p.key.topic, p.key.partition))
		w.e.metrics.lostMidRun.WithLabelValues(w.route.Name).Inc()
		w.log.Error().Int64("run_id", r.id).Str("topic", p.key.topic).Int32("partition", p.key.partition).
			Msg("partition lost mid-run: the group session expired; the run fails and its records wait for the next run")
	}
}

// drainFor processes acknowledgements and stored batches until ps have nothing open or
// the deadline passes (what is left is abandoned: not committed, read again by the next
// owner).
func (w *worker) drainFor(ps []*partition, deadline time.Time) {
	open := func() bool {
		for _, p := range ps {
			if p.trk != nil && p.trk.Open() > 0 {
				return true
			}
		}
		return false
	}
	for open() && time.Now().Before(deadline) && w.fatal == nil {
		w.flushBatch()
		w.retryProduces()
		select {
		case ev := <-w.producer.Events():
			w.onDelivery(ev)
		case f := <-w.send.failed:
			w.onProduceFailure(f.o, f.err)
		case w.sendIn() <- w.sendQ:
			w.sendQ = nil
		case b := <-w.storeOut:
			w.onStored(b)
		case <-time.After(pollInterval):
		}
	}
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
