// The parker: records on their way to PostgreSQL (scheduled or parked), a Start/Stop
// service of the loop. The loop batches them (enqueue, flush) and takes the stored batches
// back (out, done); the storer goroutines own nothing but the batch they write, received
// and returned by channel.

package redrive

import (
	"context"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/dlqops/dlq/internal/headers"
	"github.com/dlqops/dlq/internal/lifecycle"
	"github.com/dlqops/dlq/internal/store"
)

// parkItem is a record on its way to PostgreSQL.
type parkItem struct {
	part   *partition
	offset int64
	rec    store.NewRecord
}

// batchStore is what the storers write to (store.Records).
type batchStore interface {
	StoreBatch(ctx context.Context, records []store.NewRecord, ledger *store.LedgerEntry) (store.BatchResult, error)
}

var _ batchStore = (*store.Records)(nil)

type storeBatch struct {
	items []parkItem
	err   error // set when the storer gave up (shutdown)
}

// parker is the loop's: batch and storing are owned by the loop goroutine, the channels
// are shared with the storers, which run on life between Start and Stop.
type parker struct {
	store     batchStore
	route     string
	log       zerolog.Logger
	health    *health                // the storers mark the route not ready while PostgreSQL fails
	parked    *prometheus.CounterVec // dlq_worker_parked_total{route,reason}
	scheduled *prometheus.CounterVec // dlq_worker_scheduled_total{route}

	in   chan *storeBatch
	out  chan *storeBatch // stored batches, for the loop
	life lifecycle.Base

	batch   []parkItem // waiting for a free storer
	storing int        // batches handed to the storers and not back
}

func newParker(st batchStore, route string, log zerolog.Logger, h *health, m *metrics) *parker {
	return &parker{store: st, route: route, log: log, health: h, parked: m.parked, scheduled: m.scheduled,
		in: make(chan *storeBatch), out: make(chan *storeBatch, storers)}
}

// Start starts the storers; their work ends with ctx too.
func (pk *parker) Start(ctx context.Context) error {
	if _, err := pk.life.Start(ctx); err != nil {
		return err
	}
	for range storers {
		pk.life.Go(pk.storer)
	}
	return nil
}

// Stop stops the storers: they return as soon as they are cancelled, and a batch they
// hold is not stored, so its records stay uncommitted.
func (pk *parker) Stop(ctx context.Context) error { return pk.life.Stop(ctx) }

// idle reports whether no record waits for or in a storer.
func (pk *parker) idle() bool { return len(pk.batch) == 0 && pk.storing == 0 }

// enqueue adds the record m read at p, scheduled or parked as d says, to the next batch.
func (pk *parker) enqueue(p *partition, m *kafka.Message, env headers.Envelope, d decision) {
	rec := store.NewRecord{
		DLQ:    store.Coordinates{Topic: p.key.topic, Partition: p.key.partition, Offset: int64(m.TopicPartition.Offset)},
		Origin: store.Origin{Topic: env.OriginalTopic, Partition: env.OriginalPartition, Offset: env.OriginalOffset, Timestamp: env.OriginalTimestamp},
		Key:    m.Key, Value: m.Value, Headers: headers.To[store.Header](m.Headers), Timestamp: m.Timestamp,
		RetryCount: env.RetryCount, ErrorClass: env.ErrorClass, ErrorMessage: env.ErrorMessage,
		Reason: d.reason, Route: pk.route, Status: store.StatusParked,
	}
	if d.act == actSchedule {
		rec.Status, rec.DueAt = store.StatusScheduled, d.due
	} else if d.detail != "" && rec.ErrorMessage == "" {
		rec.ErrorMessage = d.detail
	}
	if msg, ok := parkWarnings[d.reason]; ok && d.act == actPark {
		pk.warn(rec.DLQ, d, msg)
	}
	pk.batch = append(pk.batch, parkItem{part: p, offset: rec.DLQ.Offset, rec: rec})
}

// parkWarnings are the park reasons that say the record itself is wrong (its headers or
// its size), by the message of their warning: an operator learns of such a record from a
// log line of its own, not only from the run's summary.
var parkWarnings = map[store.Reason]string{
	store.ReasonUnroutable:        "record parked unroutable: its headers name no valid original topic",
	store.ReasonInvalidRetryCount: "record parked invalid_retry_count: its retry count header is malformed",
	store.ReasonTooLarge:          "record parked too_large: its target topic refuses a record this large",
}

// warn logs a record parked for one of parkWarnings, rate-limited per reason like the
// route's other warnings (a DLQ full of records from a broken writer gives one line per
// interval); every park is counted in dlq_worker_parked_total. The detail quotes header
// values: it is a field of the line, never its message.
func (pk *parker) warn(at store.Coordinates, d decision, msg string) {
	n, ok := pk.health.warns.Allow("parked_" + string(d.reason))
	if !ok {
		return
	}
	pk.log.Warn().Str("topic", at.Topic).Int32("partition", at.Partition).Int64("offset", at.Offset).
		Str("reason", string(d.reason)).Str("detail", d.detail).Int("records_not_logged", n).Msg(msg)
}

// flush hands the records waiting for PostgreSQL to the free storers, at most
// storeBatchMax per batch. Batches may finish out of order: the trackers commit only
// over a contiguous done prefix.
func (pk *parker) flush() {
	for len(pk.batch) > 0 {
		n := min(len(pk.batch), storeBatchMax)
		select {
		case pk.in <- &storeBatch{items: pk.batch[:n:n]}:
			pk.storing++
			pk.batch = pk.batch[n:]
		default:
			return
		}
	}
}

// storer writes batches to PostgreSQL, retrying transient failures with a backoff until
// they succeed or the worker stops. Nothing is committed past a record before its row is.
func (pk *parker) storer(ctx context.Context) {
	for {
		var b *storeBatch
		select {
		case <-ctx.Done():
			return
		case b = <-pk.in:
		}
		recs := make([]store.NewRecord, len(b.items))
		for i := range b.items {
			recs[i] = b.items[i].rec
		}
		var warned time.Time
		for attempt := 0; ; attempt++ {
			cctx, cancel := context.WithTimeout(ctx, callTimeout)
			_, err := pk.store.StoreBatch(cctx, recs, nil)
			cancel()
			if err == nil {
				break
			}
			if ctx.Err() != nil {
				b.err = ctx.Err()
				break
			}
			pk.health.storeFailing(err)
			// The first failure, then at the backoff's cap: each line names the real cause.
			if time.Since(warned) >= stallBackoff.Cap {
				warned = time.Now()
				pk.log.Warn().Err(err).Bool("retriable", store.IsRetriable(err)).Int("records", len(recs)).Int("attempt", attempt+1).
					Msg("cannot store scheduled/parked records; their partitions stall until PostgreSQL answers")
			}
			select {
			case <-ctx.Done():
			case <-time.After(stallDelay(attempt)):
			}
		}
		select {
		case pk.out <- b:
		case <-ctx.Done():
			return // the loop has stopped reading storeOut: b stays uncommitted
		}
	}
}

// done takes a stored batch back and returns how many records it finished (none after
// a failed one: shutdown, not stored, not done, not committed).
func (pk *parker) done(b *storeBatch) int {
	pk.storing--
	if b.err != nil {
		return 0
	}
	pk.health.stored()
	for _, it := range b.items {
		if it.part.gone || !it.part.trk.Done(it.offset) {
			continue
		}
		if it.rec.Status == store.StatusScheduled {
			it.part.counts.scheduled++
			pk.scheduled.WithLabelValues(pk.route).Inc()
		} else {
			it.part.counts.parked++
			pk.parked.WithLabelValues(pk.route, string(it.rec.Reason)).Inc()
		}
	}
	return len(b.items)
}
