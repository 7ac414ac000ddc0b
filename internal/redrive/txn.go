// A route with delivery exactly_once redrives through a transactional producer of its
// own: the redriven records and the DLQ offsets they come from commit in one Kafka
// transaction, so a consumer reading read_committed sees each redriven record once
// whatever happens to the worker. Everything here runs on the loop goroutine.

package redrive

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/dlqops/dlq/internal/delivery"
	"github.com/dlqops/dlq/internal/headers"
	"github.com/dlqops/dlq/internal/kafkafast"
)

const (
	// txnEvery is how long a transaction stays open while records flow: a record
	// redriven reaches read_committed consumers up to this much (plus the commit) later,
	// and each commit holds new records back until the ones taken are acknowledged.
	txnEvery = 500 * time.Millisecond
	// txnCallTimeout bounds one transactional call (offsets, commit, abort): the
	// coordinator answers within a request timeout, a flush of the transaction's records
	// within their delivery timeout.
	txnCallTimeout = time.Minute
)

// errLedgerBehind: the ledger did not take the transaction's offsets; the commit waits.
var errLedgerBehind = errors.New("the ledger does not hold the offsets to commit yet")

// txnID is the transactional.id of a route's producer: stable per worker identity and
// route, so a worker's next life (or the replacement of a zombie) fences the previous
// producer with this id at InitTransactions and aborts the transaction it left open.
func txnID(identity, route string) string { return "dlq-worker." + identity + "." + route }

// openTxnProducer opens the route's transactional producer with pc and id, and fences
// every earlier producer with that id.
func openTxnProducer(pc kafka.ConfigMap, id string) (*kafka.Producer, error) {
	tc := make(kafka.ConfigMap, len(pc)+1)
	for k, v := range pc {
		tc[k] = v
	}
	tc["transactional.id"] = id
	p, err := kafka.NewProducer(&tc)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), txnCallTimeout)
	defer cancel()
	if err := p.InitTransactions(ctx); err != nil {
		p.Close()
		return nil, fmt.Errorf("init transactions (transactional.id %s): %w", id, err)
	}
	return p, nil
}

// openTxnPath sets up an exactly_once route: its records are read as read_path says
// (kafkafast's queue falls back to Poll like openReadPath's), and its redrives go through
// the transactional producer, which kafkafast's producer cannot be.
func (w *worker) openTxnPath(path string) produceFunc {
	if path == ReadPathQueue {
		q, err := kafkafast.NewQueue(w.consumer)
		if err == nil {
			w.records = q
		} else {
			w.log.Warn().Err(err).Str("read_path", ReadPathPoll).Msg("read_path queue is not available with this build: the route reads through confluent-kafka-go's public API")
			path = ReadPathPoll
		}
	}
	w.metrics.readPath.WithLabelValues(w.route.Name, path).Set(1)
	w.log.Info().Str("read_path", path).Str("delivery", "exactly_once").Msg("records are redriven in Kafka transactions")
	var enc delivery.Encoder
	return func(dest delivery.Destination, src delivery.Source[kafka.Header], env headers.Envelope, opts headers.EncodeOptions, opaque any) error {
		return delivery.Produce(&enc, w.tx, nil, dest, src, env, opts, opaque)
	}
}

// txn drives an exactly_once route's transactions. A transaction begins with the first
// record redriven after the last commit. Once it is txnEvery old, the throttle's barrier
// stops new records until every record taken is acknowledged or stored; then the ledger
// takes the new watermarks, and the watermarks go into the transaction as the group's
// offsets, which commits. A failed transaction stops the route: nothing of it is visible
// to read_committed consumers, and the next life reads its records again from the
// committed offsets.
type txn struct {
	*loopState
	producer  *kafka.Producer // transactional: the sender's
	consumer  *kafka.Consumer // its group metadata fences a commit after a rebalance
	ledger    *ledger
	throttle  *throttle
	park      *parker
	health    *health
	log       zerolog.Logger
	committed prometheus.Counter
	failed    prometheus.Counter
	fenced    prometheus.Counter

	open    bool      // a transaction is begun
	since   time.Time // the last commit
	retryAt time.Time // a commit that failed transiently waits until then
}

func newTxn(w *worker) *txn {
	return &txn{loopState: w.loopState, producer: w.tx, consumer: w.consumer, ledger: w.ledger, throttle: w.throttle, park: w.park,
		health: w.health, log: w.log, since: time.Now(),
		committed: w.metrics.transactions.WithLabelValues(w.route.Name, "committed"),
		failed:    w.metrics.transactions.WithLabelValues(w.route.Name, "failed"),
		fenced:    w.metrics.transactions.WithLabelValues(w.route.Name, "fenced")}
}

// begin begins a transaction unless one is open: before a record is handed to the sender.
func (x *txn) begin() error {
	if x.open {
		return nil
	}
	if err := x.producer.BeginTransaction(); err != nil {
		return fmt.Errorf("exactly_once: begin transaction: %w", err)
	}
	x.open = true
	return nil
}

// progress commits once the open transaction (or offsets of records stored without a
// redrive) is txnEvery old.
func (x *txn) progress(parts *partitions) {
	if !x.throttle.barrier {
		if time.Since(x.since) < txnEvery || !x.pending(parts) {
			return
		}
		x.throttle.barrier = true
	}
	x.settle(parts)
}

// pending reports whether anything waits for a commit.
func (x *txn) pending(parts *partitions) bool {
	if x.open {
		return true
	}
	for _, p := range parts.byKey {
		if p.trk != nil && !p.gone && p.trk.Watermark() > p.stored {
			return true
		}
	}
	return false
}

// quiet reports whether every record taken is acknowledged or stored.
func (x *txn) quiet() bool { return x.inFlight == 0 && len(x.retries) == 0 && x.park.idle() }

// settle commits what is done once nothing is in flight, and reports whether nothing is
// left to commit. A transient failure is retried at a later call.
func (x *txn) settle(parts *partitions) bool {
	if x.fatal != nil || !x.quiet() || time.Now().Before(x.retryAt) {
		return false
	}
	err := x.commit(parts)
	if err == nil {
		x.throttle.barrier = false
		return true
	}
	var ke kafka.Error
	if fencedBy(err) != "" {
		x.fail(err)
		return false
	}
	if errors.Is(err, errLedgerBehind) || errors.As(err, &ke) && ke.IsRetriable() {
		x.retryAt = time.Now().Add(x.health.stall("transaction", err, "cannot commit the transaction yet; retrying"))
		return false
	}
	x.fail(err)
	return false
}

// commit writes the watermarks past the last commit to the ledger, then commits them as
// the group's offsets in the open transaction with its records.
func (x *txn) commit(parts *partitions) error {
	var ps []*partition
	var offs []kafka.TopicPartition
	for _, p := range parts.byKey {
		if p.trk != nil && !p.gone && p.trk.Watermark() > p.stored {
			ps = append(ps, p)
			offs = append(offs, kafka.TopicPartition{Topic: &p.key.topic, Partition: p.key.partition, Offset: kafka.Offset(p.trk.Watermark())})
		}
	}
	if !x.open && len(ps) == 0 {
		x.since = time.Now()
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), txnCallTimeout)
	defer cancel()
	if len(ps) > 0 {
		// The ledger first: a commit is never ahead of it. A crash between the two leaves
		// the ledger ahead of the committed offsets, which the next life reads as a
		// transaction that did not commit (checkAssigned).
		x.ledger.ledgerNow(ps)
		for _, p := range ps {
			if p.durable < p.trk.Watermark() {
				return errLedgerBehind
			}
		}
		if err := x.begin(); err != nil {
			return err
		}
		meta, err := x.consumer.GetConsumerGroupMetadata()
		if err != nil {
			return fmt.Errorf("exactly_once: group metadata: %w", err)
		}
		if err := x.producer.SendOffsetsToTransaction(ctx, offs, meta); err != nil {
			return fmt.Errorf("exactly_once: offsets into the transaction: %w", err)
		}
	}
	if err := x.producer.CommitTransaction(ctx); err != nil {
		return fmt.Errorf("exactly_once: commit transaction: %w", err)
	}
	x.open, x.since = false, time.Now()
	for i, p := range ps {
		p.stored = int64(offs[i].Offset)
	}
	x.committed.Inc()
	x.health.unstall()
	return nil
}

// fail stops the route on a transaction that cannot commit (fenced by a newer producer
// with this transactional.id, a rebalance that fenced its group generation, a record the
// broker refused): the transaction is aborted, so read_committed consumers never see its
// records, and none of its offsets is committed.
func (x *txn) fail(err error) {
	if x.fatal != nil {
		return
	}
	x.abort()
	if by := fencedBy(err); by != "" {
		x.fenced.Inc()
		x.fatal = fmt.Errorf("exactly_once: fenced by %s: this worker is a zombie of the route; its transaction is aborted and the route stops, its records are the new owner's: %w", by, err)
		return
	}
	x.failed.Inc()
	x.fatal = fmt.Errorf("exactly_once: transaction failed, aborted; its records are read again from the committed offsets by the route's next life: %w", err)
}

// abort aborts the open transaction, if any; a fenced producer cannot, and its
// transaction is aborted by the coordinator (fenced, or at transaction.timeout.ms).
func (x *txn) abort() {
	if !x.open {
		return
	}
	x.open = false
	ctx, cancel := context.WithTimeout(context.Background(), txnCallTimeout)
	defer cancel()
	if err := x.producer.AbortTransaction(ctx); err != nil {
		x.log.Warn().Err(err).Msg("cannot abort the transaction; the transaction coordinator aborts it (fenced, or at transaction.timeout.ms)")
	}
}

// settleBy waits, serving acknowledgements and stored batches, until nothing is in
// flight and commits; past deadline, or when the commit fails, it aborts the transaction
// and stops the route. For a revocation and the shutdown: what is not committed now
// would be committed without its partitions' offsets.
func (w *worker) settleBy(deadline time.Time) {
	x := w.txn
	w.drainWhile(func() bool { return !x.quiet() }, deadline)
	for !x.settle(w.parts) && w.fatal == nil {
		if time.Now().After(deadline) {
			x.fail(errors.New("records still in flight, or the commit failing, when the revocation or shutdown grace ran out"))
			return
		}
		time.Sleep(pollInterval)
	}
}
