// Rebalances, handled inside Poll on the loop: an assignment is checked against the
// ledger and paused until a run; a revocation finishes or abandons in-flight work within
// a bound, commits exactly what is done and writes the run's ledger of what it read.

package redrive

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
)

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

func (w *worker) assign(tps []kafka.TopicPartition) {
	ps, ahead := w.ledger.assigned(tps)
	if err := w.parts.assign(tps, ps); err == nil && w.txn != nil && len(ahead) > 0 {
		for _, p := range ahead {
			p.stored = -1 // committed by the next transaction, now
		}
		w.settleBy(time.Now().Add(revokeGrace))
	} else if err == nil {
		if err := w.ledger.commitNow(ahead); err != nil {
			w.health.warnEvery("commit", err, "cannot commit the ledger's position at assignment; the next commit moves past it")
		}
	}
	w.log.Info().Int("partitions", len(tps)).Msg("partitions assigned (paused until a run)")
}

// revokeGrace bounds how long a revocation waits for in-flight records.
const revokeGrace = 10 * time.Second

func (w *worker) revoke(tps []kafka.TopicPartition) {
	var ps []*partition
	for _, tp := range tps {
		if p := w.parts.of(tp); p != nil {
			p.reading = false
			ps = append(ps, p)
		}
	}
	lost := w.consumer.AssignmentLost()
	// An eager revocation takes every partition until the group's next assignment; a
	// cooperative one only some, and the worker keeps the rest.
	if lost || !w.parts.cooperative() {
		w.parts.assigned = false
	}
	if lost && w.run != nil {
		w.lostMidRun(ps)
	}
	if lost && w.txn != nil && w.txn.open {
		w.txn.fail(errAssignmentLost)
	}
	if !lost {
		if w.txn != nil {
			// Every partition's records, not only the revoked ones': the transaction
			// commits them all, and after the revocation it could not commit the
			// revoked partitions' offsets.
			w.settleBy(time.Now().Add(revokeGrace))
		} else {
			w.drainFor(ps, time.Now().Add(revokeGrace))
		}
		if err := w.ledger.commitNow(ps); err != nil {
			w.health.warnEvery("commit", err, "commit on revoke failed")
		}
		if w.run != nil {
			cctx, cancel := context.WithTimeout(context.Background(), callTimeout)
			for _, p := range ps {
				if !slices.Contains(w.run.parts, p) {
					continue // not read by this run: nothing of it is this run's to account for
				}
				if err := w.runner.recordLedger(cctx, w.run, p); err != nil {
					w.health.warnEvery("ledger", err, "cannot write the ledger of a revoked partition")
				}
			}
			cancel()
		}
	}
	w.throttle.forget(ps)
	w.parts.revoke(tps, ps)
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
		w.metrics.lostMidRun.WithLabelValues(w.route.Name).Inc()
		w.log.Error().Int64("run_id", r.id).Str("topic", p.key.topic).Int32("partition", p.key.partition).
			Msg("partition lost mid-run: the group session expired; the run fails and its records wait for the next run")
	}
}

// drainFor processes acknowledgements and stored batches until ps have nothing open or
// the deadline passes (what is left is abandoned: not committed, read again by the next
// owner).
func (w *worker) drainFor(ps []*partition, deadline time.Time) {
	w.drainWhile(func() bool {
		for _, p := range ps {
			if p.trk != nil && p.trk.Open() > 0 {
				return true
			}
		}
		return false
	}, deadline)
}

// drainWhile processes acknowledgements and stored batches while busy says so, until the
// deadline.
func (w *worker) drainWhile(busy func() bool, deadline time.Time) {
	for busy() && time.Now().Before(deadline) && w.fatal == nil {
		w.park.flush()
		w.walk.retryProduces()
		select {
		case ev := <-w.producer.Events():
			w.walk.onDelivery(ev)
		case ev := <-w.redriveReports():
			w.walk.onDelivery(ev)
		case f := <-w.send.failed:
			w.walk.onProduceFailure(f.o, f.err)
		case w.send.input() <- w.send.queued:
			w.send.handed()
		case b := <-w.park.out:
			w.walk.onStored(b)
		case <-time.After(pollInterval):
		}
	}
}
