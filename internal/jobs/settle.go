package jobs

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/dlqops/dlq/internal/backoff"
	"github.com/dlqops/dlq/internal/delivery"
	"github.com/dlqops/dlq/internal/store"
)

// settleAll settles up to settlers batches at once and applies their outcomes in batch
// order, saving progress after each, so that the saved cursor never passes a record
// that is not finished. On failure (above all the job lost: cancelled or taken over) it
// stops the sending stage and still settles what was sent, so that every record it
// leased ends replayed or back where it was.
func (x *execution) settleAll(ctx context.Context, in <-chan *batch, stopSending context.CancelFunc) error {
	type settling struct {
		b   *batch
		err chan error
	}
	// One settling waits in applied order below; settlers-1 more queue here, each
	// already running.
	order := make(chan settling, settlers-1)
	go func() {
		defer close(order)
		for b := range in {
			s := settling{b: b, err: make(chan error, 1)}
			order <- s
			go func() { s.err <- x.settle(ctx, b) }()
		}
	}()
	var failed error
	var saved time.Time    // progress last saved
	var settled int64      // handed records of the batches applied
	var savedSettled int64 // of those, the ones counted in the progress last saved
	lost := func(err error) {
		if errors.Is(err, errLost) {
			x.cancelled, x.settledAtCancel = x.wasCancelled(ctx), savedSettled
		}
	}
	for s := range order {
		err := <-s.err
		// A batch that says the job was lost settled all the same.
		settledAll := err == nil || errors.Is(err, errLost)
		if failed != nil {
			if settledAll && x.cancelled {
				x.apply(s.b) // what was in flight at the cancel and still reached the target
				continue
			}
			if err != nil && !errors.Is(err, errLost) && ctx.Err() == nil {
				x.log.Warn().Err(err).Msg("cannot settle a batch of a lost job; its leases expire")
			}
			continue
		}
		applied := err == nil
		if applied {
			x.apply(s.b)
			settled += int64(s.b.handed)
			if time.Since(saved) >= x.beatEvery() {
				saved = time.Now()
				if err = x.heartbeat(ctx); err == nil {
					savedSettled = settled
				}
			}
		}
		if err != nil {
			failed = err
			lost(err)
			if settledAll && !applied && x.cancelled {
				x.apply(s.b) // in flight at the cancel: counted as the ones after it
			}
			x.abandoned.Store(true)
			stopSending()
		}
	}
	if failed == nil && !saved.IsZero() {
		failed = x.heartbeat(ctx) // what settled since the last save
		lost(failed)
	}
	return failed
}

// settlers is how many batches a job settles at once: settling a batch is mostly one
// transaction that rewrites its rows, and PostgreSQL runs each on one core.
const settlers = 3

// apply counts a settled batch in the job's progress and moves the cursor past it.
func (x *execution) apply(b *batch) {
	x.progressMu.Lock()
	defer x.progressMu.Unlock()
	if b.why != "" && x.firstFailure == "" {
		x.firstFailure = fmt.Sprintf("record %d: %s", b.whyID, b.why)
	}
	x.progress.Done += int64(b.done)
	x.progress.Failed += int64(b.failed)
	x.progress.Skipped += int64(b.skipped)
	x.progress.Cursor = b.last
	x.count("done", b.done)
	x.count("failed", b.failed)
	x.count("skipped", b.skipped)
}

// settle waits for a batch's delivery reports, extending the job's lease while it waits
// (a broker outage can hold them for the producer's whole delivery timeout), produces
// again after a backoff the records that failed for a transient cause (the broker is down,
// a lookup timed out) until they are delivered, marks each record replayed where it was
// produced or parked with the reason it cannot go, and moves the cursor past the batch.
//
// Once the job is lost (abandoned, or a heartbeat says so) nothing is retried; the
// records are only settled, those that failed transiently going back where they were.
// The caller applies the batch's counts (apply).
func (x *execution) settle(ctx context.Context, b *batch) error {
	// A heartbeat at least every second is also how a cancel is noticed while deliveries
	// wait.
	ticker := time.NewTicker(x.beatEvery())
	defer ticker.Stop()
	beat := !x.abandoned.Load()
	var lost error
	var enc delivery.Encoder
	for attempt := 0; ; attempt++ {
		if err := x.await(ctx, b, ticker, nil, &beat, &lost); err != nil {
			return err
		}
		retry := b.transient()
		if len(retry) == 0 || !beat || x.abandoned.Load() {
			break
		}
		if x.stopRequested() {
			lost = errStopped
			break
		}
		delay := retryBackoff.Delay(attempt, rand.Float64())
		x.retries.WithLabelValues(string(x.job.Kind)).Add(float64(len(retry)))
		x.log.Warn().Err(b.results[retry[0]].err).Int("records", len(retry)).Int64("delay_ms", delay.Milliseconds()).
			Msg("records failed for a transient cause; producing them again after a backoff")
		if err := x.await(ctx, b, ticker, time.After(delay), &beat, &lost); err != nil {
			return err
		}
		if !beat {
			break
		}
		if x.stopRequested() {
			lost = errStopped
			break
		}
		b.produce(x.producer, &enc, x.produce, retry)
	}
	var done []store.Redriven
	failed := map[store.Reason][]int64{}
	var back []int64 // failed transiently, the job lost or stopping: back where they were
	for i, res := range b.results {
		if res.err == nil {
			done = append(done, store.Redriven{ID: b.sent[i].ID, Produced: res.at})
			continue
		}
		retriable, reason := classify(res.err)
		if retriable {
			back = append(back, b.sent[i].ID)
			continue
		}
		failed[reason] = append(failed[reason], b.sent[i].ID)
		b.refuse(b.sent[i].ID, res.err.Error(), 1)
	}
	if len(done) > 0 {
		n, err := x.cfg.Store.FinishReplays(ctx, x.job.ID, x.owner, b.leases, done, x.actor())
		if err != nil {
			return err
		}
		if n < len(done) {
			lost = errLost // another holder took some over
		}
		b.done += n
	}
	if len(back) > 0 {
		failed[""] = append(failed[""], back...)
	}
	for reason, ids := range failed {
		if _, err := x.cfg.Store.AbortReplays(ctx, x.job.ID, x.owner, ids, reason, x.actor()); err != nil {
			return err
		}
	}
	return lost
}

// await waits until b has no delivery in flight and, when until is set, until it fires,
// heartbeating meanwhile. A lost job clears beat and sets lost; what is in flight is still
// awaited.
func (x *execution) await(ctx context.Context, b *batch, ticker *time.Ticker, until <-chan time.Time, beat *bool, lost *error) error {
	for b.inFlight > 0 || until != nil {
		select {
		case ev := <-b.reports:
			m, ok := ev.(*kafka.Message)
			if !ok {
				continue
			}
			b.inFlight--
			i := m.Opaque.(int)
			if m.TopicPartition.Error != nil {
				b.results[i].err = m.TopicPartition.Error
				continue
			}
			b.results[i] = produced{at: store.Coordinates{Topic: *m.TopicPartition.Topic, Partition: m.TopicPartition.Partition, Offset: int64(m.TopicPartition.Offset)}}
		case <-until:
			until = nil
		case <-ticker.C:
			if !*beat {
				if until != nil {
					return nil // nothing to retry for a lost job
				}
				continue
			}
			if err := x.heartbeat(ctx); errors.Is(err, errLost) {
				// Settle this batch all the same, then stop.
				*beat, *lost = false, err
			} else if err != nil {
				return err
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// transient returns the indexes of the records whose produce failed for a cause a retry
// may fix.
func (b *batch) transient() []int {
	var out []int
	for i, res := range b.results {
		if retriable, _ := classify(res.err); res.err != nil && retriable {
			out = append(out, i)
		}
	}
	return out
}

// retryBackoff spaces a job's retries of records that failed for a transient cause.
var retryBackoff = backoff.Policy{Base: 250 * time.Millisecond, Factor: 2, Cap: 10 * time.Second, Jitter: 0.2}
