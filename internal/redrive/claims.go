// Claims: the due scheduled records of the route, leased from PostgreSQL in batches at
// the end of a run's DLQ phase and redriven through the loop's producer. A claimState
// is the loop's; its records' acknowledgements come back through the producer's events.

package redrive

import (
	"context"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/dlqops/dlq/internal/delivery"
	"github.com/dlqops/dlq/internal/headers"
	"github.com/dlqops/dlq/internal/store"
)

// claimState is a batch of due scheduled rows leased from PostgreSQL.
type claimState struct {
	token       string
	pending     []store.Record
	outstanding int
	done        []store.Redriven
	park        map[store.Reason][]int64
	release     []int64
}

// claimed is the Opaque of a produced scheduled record.
type claimed struct {
	c   *claimState
	rec store.Record
}

// progressClaims redrives due scheduled rows batch by batch and reports when none is left.
func (w *worker) progressClaims(ctx context.Context) bool {
	r := w.run
	c := r.claim
	if c == nil {
		cctx, cancel := context.WithTimeout(ctx, callTimeout)
		claim, err := w.e.store.ClaimDue(cctx, w.route.Name, w.e.instanceID, claimBatch, claimLease)
		cancel()
		if err != nil {
			r.next = time.Now().Add(w.health.stall("store", err, "cannot claim due scheduled records; retrying"))
			return false
		}
		// PostgreSQL answers again: a run whose last work is here (no record to redrive)
		// would otherwise stay not ready until the next acknowledgement.
		w.health.unstall()
		if len(claim.Records) == 0 {
			return true
		}
		c = &claimState{token: claim.Token, pending: claim.Records, park: map[store.Reason][]int64{}}
		r.claim = c
	}
	if err := w.beginRun(ctx, r); err != nil { // the claim's lease holds its records meanwhile
		r.next = time.Now().Add(w.health.backoffNow())
		return false
	}
	for len(c.pending) > 0 && w.throttle.admit(w.inFlight) {
		rec := c.pending[0]
		c.pending = c.pending[1:]
		w.produceClaimed(c, rec)
	}
	if len(c.pending) > 0 || c.outstanding > 0 {
		return false
	}
	if err := w.settleClaim(ctx, c); err != nil {
		r.next = time.Now().Add(w.health.stall("store", err, "cannot record redriven scheduled records; retrying"))
		return false
	}
	r.claim = nil
	return false
}

func (w *worker) produceClaimed(c *claimState, rec store.Record) {
	dec := headers.DecodeOf(rec.Headers)
	from := headers.Coordinates{Topic: rec.DLQ.Topic, Partition: rec.DLQ.Partition, Offset: rec.DLQ.Offset}
	topic, refused := w.route.rules.Target(rec.Origin.Topic, "")
	if refused != nil {
		c.park[refused.Reason] = append(c.park[refused.Reason], rec.ID)
		return
	}
	target, ok, err := w.topics.Partition(topic, rec.Origin.Partition, rec.Key)
	switch {
	case err != nil:
		w.health.stall("metadata", err, "cannot look up the original topic of a scheduled record")
		c.release = append(c.release, rec.ID)
		return
	case !ok:
		c.park[store.ReasonUnknownTopic] = append(c.park[store.ReasonUnknownTopic], rec.ID)
		return
	}
	err = delivery.Produce(&w.claimEnc, w.producer, nil, delivery.Destination{Topic: topic, Partition: target},
		delivery.Source[store.Header]{Key: rec.Key, Value: rec.Value, Timestamp: rec.Timestamp, Headers: rec.Headers},
		dec.Envelope.DeadLetteredAt(rec.Timestamp).Redriven(from, w.e.clock()), w.route.rules.Encode, &claimed{c: c, rec: rec})
	if err != nil {
		w.onClaimFailure(c, rec, err)
		return
	}
	c.outstanding++
	w.inFlight++
}

func (w *worker) onClaimAck(o *claimed, ack *kafka.Message) {
	w.inFlight--
	o.c.outstanding--
	if err := ack.TopicPartition.Error; err != nil {
		w.onClaimFailure(o.c, o.rec, err)
		return
	}
	o.c.done = append(o.c.done, store.Redriven{ID: o.rec.ID, Produced: store.Coordinates{
		Topic: *ack.TopicPartition.Topic, Partition: ack.TopicPartition.Partition, Offset: int64(ack.TopicPartition.Offset)}})
	w.redrivenCount.Inc()
}

func (w *worker) onClaimFailure(c *claimState, rec store.Record, err error) {
	switch class, reason := delivery.Classify(err); class {
	case delivery.Fatal:
		w.fatal = err
	case delivery.Permanent:
		c.park[reason] = append(c.park[reason], rec.ID)
	default:
		w.health.stall("produce", err, "cannot produce a scheduled record; it is released for a later run")
		c.release = append(c.release, rec.ID)
	}
}

// settleClaim records the outcome of a claim; each step is cleared once done, so a retry
// after a PostgreSQL failure does not repeat it.
func (w *worker) settleClaim(ctx context.Context, c *claimState) error {
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	if len(c.done) > 0 {
		if _, err := w.e.store.MarkRedriven(cctx, c.token, c.done); err != nil {
			return err
		}
		c.done = nil
	}
	for reason, ids := range c.park {
		n, err := w.e.store.ParkClaimed(cctx, c.token, ids, reason, "redrive of a due scheduled record: "+string(reason))
		if err != nil {
			return err
		}
		w.e.metrics.parked.WithLabelValues(w.route.Name, string(reason)).Add(float64(n))
		delete(c.park, reason)
	}
	if len(c.release) > 0 {
		if _, err := w.e.store.ReleaseClaim(cctx, c.token, c.release, w.e.clock().Add(stallBackoff.Cap)); err != nil {
			return err
		}
		c.release = nil
	}
	return nil
}
