// Claims: the due scheduled records of the route, leased from PostgreSQL in batches at
// the end of a run's DLQ phase and redriven through the loop's producer. The loop drives
// them (progressClaims, the runner's due phase); the claims part leases, produces and settles.
// Their acknowledgements come back through the producer's events.

package redrive

import (
	"context"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/dlqops/dlq/internal/delivery"
	"github.com/dlqops/dlq/internal/headers"
	"github.com/dlqops/dlq/internal/store"
)

// claimState is a batch of due scheduled rows leased from PostgreSQL; the run holds it.
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
	c     *claimState
	rec   store.Record
	again bool   // the record came back after an earlier redrive (breaker.go)
	group string // the label of its failing group (groupmetrics.go)
}

// claimStore is what the claims need of the records (store.Records): a lease of due
// records, and how each ended.
type claimStore interface {
	ClaimDue(ctx context.Context, route, owner string, limit int, lease time.Duration) (store.Claim, error)
	MarkRedriven(ctx context.Context, token string, done []store.Redriven) (int, error)
	ParkClaimed(ctx context.Context, token string, ids []int64, reason store.Reason, errMsg string) (int, error)
	ReleaseClaim(ctx context.Context, token string, ids []int64, dueAt time.Time) (int, error)
}

var _ claimStore = (*store.Records)(nil)

// claims leases, produces and settles due scheduled rows; owned by the loop goroutine.
type claims struct {
	store      claimStore
	route      route
	instanceID string
	clock      func() time.Time // the hop's time in the redriven record's headers
	producer   *kafka.Producer
	topics     *delivery.Topics
	health     *health
	parked     *prometheus.CounterVec // dlq_worker_parked_total{route,reason}
	redriven   prometheus.Counter     // the route's dlq_worker_redriven_total
	groups     *groupRedriven         // the route's dlq_worker_group_redriven_total
	breaker    *breaker               // while open, nothing is claimed; while half-open, its probes
	enc        delivery.Encoder       // builds scheduled records on the loop; the sender has its own
}

// progressClaims redrives due scheduled rows batch by batch and reports when none is left.
func (w *runner) progressClaims(ctx context.Context) bool {
	r := w.run
	c := r.claim
	if c == nil {
		limit := min(claimBatch, w.breaker.probesLeft(w.clock()))
		if limit == 0 {
			return true // the breaker holds the scheduled records where they are
		}
		var err error
		if c, err = w.claims.lease(ctx, limit); err != nil {
			r.next = time.Now().Add(w.health.stall("store", err, "cannot claim due scheduled records; retrying"))
			return false
		}
		// PostgreSQL answers again: a run whose last work is here (no record to redrive)
		// would otherwise stay not ready until the next acknowledgement.
		w.health.unstall()
		if c == nil {
			return true
		}
		r.claim = c
	}
	if err := w.beginRun(ctx, r); err != nil { // the claim's lease holds its records meanwhile
		r.next = time.Now().Add(w.health.backoffNow())
		return false
	}
	for len(c.pending) > 0 && w.throttle.admit(nil, 0, w.inFlight) { // a claimed row is in no DLQ window
		rec := c.pending[0]
		c.pending = c.pending[1:]
		sent, err := w.claims.produce(c, rec)
		if err != nil {
			w.fatal = err
			return false
		}
		if sent {
			w.inFlight++
		}
	}
	if len(c.pending) > 0 || c.outstanding > 0 {
		return false
	}
	if err := w.claims.settle(ctx, c); err != nil {
		r.next = time.Now().Add(w.health.stall("store", err, "cannot record redriven scheduled records; retrying"))
		return false
	}
	r.claim = nil
	return false
}

func (w *walk) onClaimAck(o *claimed, ack *kafka.Message) {
	w.inFlight--
	if err := w.claims.acked(o, ack); err != nil {
		w.fatal = err
	}
}

// lease claims the next batch of at most limit due rows; nil when none is due.
func (cl *claims) lease(ctx context.Context, limit int) (*claimState, error) {
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	claim, err := cl.store.ClaimDue(cctx, cl.route.Name, cl.instanceID, limit, claimLease)
	if err != nil || len(claim.Records) == 0 {
		return nil, err
	}
	return &claimState{token: claim.Token, pending: claim.Records, park: map[store.Reason][]int64{}}, nil
}

// produce sends rec to its original topic and reports whether it is in flight; the
// error is a fatal one, which stops the loop.
func (cl *claims) produce(c *claimState, rec store.Record) (bool, error) {
	dec := headers.DecodeOf(rec.Headers)
	from := recordFrom(rec)
	to, refused := cl.route.rules.Redrive(rec.Origin.Topic, dec.Envelope.Group)
	if refused != nil {
		c.park[refused.Reason] = append(c.park[refused.Reason], rec.ID)
		return false, nil
	}
	topic := to.Topic
	original := int32(-1)
	if topic == rec.Origin.Topic {
		original = rec.Origin.Partition
	}
	target, ok, err := cl.topics.Partition(topic, original, rec.Key)
	switch {
	case err != nil:
		cl.health.stall("metadata", err, "cannot look up the original topic of a scheduled record")
		c.release = append(c.release, rec.ID)
		return false, nil
	case !ok:
		c.park[store.ReasonUnknownTopic] = append(c.park[store.ReasonUnknownTopic], rec.ID)
		return false, nil
	case !cl.breaker.allow(from, cl.causeOf(rec), cl.clock()):
		c.release = append(c.release, rec.ID)
		return false, nil
	}
	env := dec.Envelope.DeadLetteredAt(rec.Timestamp).Redriven(from, cl.clock())
	env.TargetGroup = to.Group
	err = delivery.Produce(&cl.enc, cl.producer, nil, delivery.Destination{Topic: topic, Partition: target},
		delivery.Source[store.Header]{Key: rec.Key, Value: rec.Value, Timestamp: rec.Timestamp, Headers: rec.Headers},
		env, cl.route.rules.Encode, &claimed{c: c, rec: rec, again: dec.Envelope.RedriveID != nil, group: cl.groups.label(dec.Envelope.Group)})
	if err != nil {
		return false, cl.failed(c, rec, err)
	}
	c.outstanding++
	return true, nil
}

// acked takes the acknowledgement of a produced scheduled record; the error is a fatal one.
func (cl *claims) acked(o *claimed, ack *kafka.Message) error {
	o.c.outstanding--
	if err := ack.TopicPartition.Error; err != nil {
		return cl.failed(o.c, o.rec, err)
	}
	o.c.done = append(o.c.done, store.Redriven{ID: o.rec.ID, Produced: store.Coordinates{
		Topic: *ack.TopicPartition.Topic, Partition: ack.TopicPartition.Partition, Offset: int64(ack.TopicPartition.Offset)}})
	cl.redriven.Inc()
	cl.groups.inc(o.group)
	cl.breaker.redriven(recordFrom(o.rec), o.again, cl.clock())
	return nil
}

// failed parks rec (a permanent failure) or releases it for a later run (a transient
// one); it returns a fatal error.
func (cl *claims) failed(c *claimState, rec store.Record, err error) error {
	switch class, reason := delivery.Classify(err); class {
	case delivery.Fatal:
		return err
	case delivery.Permanent:
		cl.breaker.settled(recordFrom(rec))
		c.park[reason] = append(c.park[reason], rec.ID)
	default:
		cl.health.stall("produce", err, "cannot produce a scheduled record; it is released for a later run")
		c.release = append(c.release, rec.ID)
	}
	return nil
}

// settle records the outcome of a claim; each step is cleared once done, so a retry
// after a PostgreSQL failure does not repeat it.
func (cl *claims) settle(ctx context.Context, c *claimState) error {
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	if len(c.done) > 0 {
		if _, err := cl.store.MarkRedriven(cctx, c.token, c.done); err != nil {
			return err
		}
		c.done = nil
	}
	for reason, ids := range c.park {
		n, err := cl.store.ParkClaimed(cctx, c.token, ids, reason, "redrive of a due scheduled record: "+string(reason))
		if err != nil {
			return err
		}
		cl.parked.WithLabelValues(cl.route.Name, string(reason)).Add(float64(n))
		delete(c.park, reason)
	}
	if len(c.release) > 0 {
		if _, err := cl.store.ReleaseClaim(cctx, c.token, c.release, cl.clock().Add(stallBackoff.Cap)); err != nil {
			return err
		}
		c.release = nil
	}
	return nil
}

// recordFrom is the DLQ position a scheduled record was read at: its next hop's redrive id.
// causeOf is a scheduled record's cause when the breaker holds some cause apart, else "".
func (cl *claims) causeOf(rec store.Record) string {
	if !cl.breaker.holdsCauses() {
		return ""
	}
	return causeOf(rec.ErrorClass, rec.ErrorMessage, rec.Origin.Topic)
}

func recordFrom(rec store.Record) headers.Coordinates {
	return headers.Coordinates{Topic: rec.DLQ.Topic, Partition: rec.DLQ.Partition, Offset: rec.DLQ.Offset}
}
