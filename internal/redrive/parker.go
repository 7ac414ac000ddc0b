// The parker: records on their way to PostgreSQL (scheduled or parked). The loop batches
// them (enqueueStore, flushBatch) and takes the stored batches back (onStored); the
// storer goroutines own nothing but the batch they write, received and returned by
// channel. The loop starts and stops the storers (worker.loop).

package redrive

import (
	"context"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/dlqops/dlq/internal/headers"
	"github.com/dlqops/dlq/internal/store"
)

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
			w.health.storeFailing(err)
			// The first failure, then at the backoff's cap: each line names the real cause.
			if time.Since(warned) >= stallBackoff.Cap {
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
			w.throttle.release(w.inFlight)
			return
		}
	}
}

func (w *worker) onStored(b *storeBatch) {
	w.storing--
	if b.err != nil {
		return // shutdown: not stored, not done, not committed
	}
	w.health.stored()
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
