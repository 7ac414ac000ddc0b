package jobs

import (
	"context"

	"github.com/dlqops/dlq/internal/store"
)

// page is one page of a job's records, leased ahead (leased) or not (recs), or the error
// that ended the selection; last is 0 once the selection is exhausted. Its fields are
// set when ready is closed.
type page struct {
	ready  chan struct{}
	last   int64
	recs   []store.Record
	leased *batch
	err    error
}

// selectAll reads the job's records page by page after cursor, one page ahead of the
// sending, and leases each (ahead) as it hands it over, until the selection is exhausted
// (a page with last 0), fails or ctx ends. A page is handed over before its lease starts,
// so that every lease it starts is in out.
func (x *execution) selectAll(ctx context.Context, cursor int64, size int, ahead bool, out chan<- *page) {
	defer close(out)
	for {
		recs, err := x.cfg.Store.JobRecords(ctx, x.job, cursor, size)
		pg := &page{ready: make(chan struct{}), recs: recs, err: err}
		if err == nil && len(recs) > 0 {
			pg.last = recs[len(recs)-1].ID
		}
		select {
		case out <- pg:
		case <-ctx.Done():
			return
		}
		if pg.last == 0 {
			close(pg.ready)
			return
		}
		if !ahead {
			close(pg.ready)
		} else {
			go func() {
				defer close(pg.ready)
				pg.leased, pg.err = x.lease(ctx, recs)
			}()
		}
		cursor = pg.last
	}
}

// returnUnsent waits for the pages selectAll handed over and nobody sent, and puts back
// where they were the records leased for them.
func (x *execution) returnUnsent(ctx context.Context, pages <-chan *page) {
	for pg := range pages {
		<-pg.ready
		if pg.leased == nil || len(pg.leased.sent) == 0 {
			continue
		}
		ids := recordIDs(pg.leased.sent)
		if _, err := x.cfg.Store.AbortReplays(context.WithoutCancel(ctx), x.job.ID, x.owner, ids, "", x.actor()); err != nil {
			x.log.Warn().Err(err).Int("records", len(ids)).Msg("cannot put back records leased and not sent; their leases expire")
		}
	}
}
