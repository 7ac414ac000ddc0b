package jobs

import (
	"context"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"golang.org/x/time/rate"
)

// sendAll selects, leases and sends batches until the selection is exhausted (false, nil),
// the runner stops (true, nil) or something fails. It closes out. A job without a rate
// limit leases its next page while it produces one; a record leased and not produced goes
// back where it was before sendAll returns.
func (x *execution) sendAll(ctx context.Context, out chan<- *batch) (stopped bool, err error) {
	defer close(out)
	size := x.batchSize()
	var limiter *rate.Limiter
	if rps := x.job.RatePerSecond; rps > 0 {
		limiter = rate.NewLimiter(rate.Limit(rps), size)
	}
	paging, stopPaging := context.WithCancel(ctx)
	pages := make(chan *page, 1)
	cursor := x.progress.Cursor // before any batch settles
	go x.selectAll(paging, cursor, size, limiter == nil, pages)
	defer func() {
		stopPaging()
		x.returnUnsent(ctx, pages)
	}()
	for !x.stopRequested() {
		var pg *page
		select {
		case pg = <-pages:
		case <-ctx.Done():
			return false, ctx.Err()
		}
		<-pg.ready
		if pg.err != nil || pg.last == 0 {
			return false, pg.err
		}
		b := pg.leased
		if b == nil {
			if err := limiter.WaitN(ctx, len(pg.recs)); err != nil {
				return false, err
			}
			if b, err = x.lease(ctx, pg.recs); err != nil {
				return false, err
			}
		}
		if len(b.sent) > 0 {
			b.results = make([]produced, len(b.sent))
			b.reports = make(chan kafka.Event, len(b.sent))
			b.produce(x.producer, &x.enc, x.produce, allOf(len(b.sent)))
			b.handed = b.inFlight
			x.handed.Add(int64(b.handed))
			// What the producer holds reaches the target whatever happens next: it is
			// settled and counted even when the sending stops now (a cancel).
			out <- b
			continue
		}
		select {
		case out <- b:
		case <-ctx.Done():
			return false, ctx.Err()
		}
	}
	return true, nil
}
