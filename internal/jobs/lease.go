package jobs

import (
	"context"
	"errors"

	"github.com/dlqops/dlq/internal/store"
)

func (b *batch) refuse(id int64, why string, n int) {
	b.note(id, why)
	b.failed += n
}

// skip counts n records the job leaves alone (another job holds them, or they are not
// parked or scheduled any more).
func (b *batch) skip(id int64, n int) {
	b.note(id, "not parked or scheduled any more, or held by another job")
	b.skipped += n
}

func (b *batch) note(id int64, why string) {
	if b.why == "" {
		b.why, b.whyID = why, id
	}
}

// lease starts a batch of recs: the records already finished are counted, a discard
// job's are discarded, a replay job's are leased (sent, to be produced).
func (x *execution) lease(ctx context.Context, recs []store.Record) (*batch, error) {
	b := &batch{last: recs[len(recs)-1].ID}
	finished := store.StatusReplayed
	if x.job.Kind == store.JobDiscard {
		finished = store.StatusDiscarded
	}
	// The page is filtered in place, twice: a record is a few hundred bytes, and copying a
	// thousand of them into slices grown on the way cost more than the rest of this.
	todo := recs[:0]
	valueGiven := x.job.Edit != nil && x.job.Edit.ValueSet
	for i := range recs {
		switch {
		case recs[i].JobID == x.job.ID && recs[i].Status == finished:
			b.done++ // by an earlier holder that crashed before saving progress
			continue
		case x.job.Kind == store.JobReplay && recs[i].NoPayload() && !valueGiven:
			// dlq-admin refuses such a replay; one that reached the runner anyway (a job
			// of an earlier version) leaves the record parked rather than invent a record.
			b.refuse(recs[i].ID, errNoPayload.Error(), 1)
			continue
		}
		todo = append(todo, recs[i])
	}
	if len(todo) == 0 {
		return b, nil
	}
	if x.job.Kind == store.JobDiscard {
		n, err := x.cfg.Store.DiscardRecords(ctx, x.job.ID, recordIDs(todo), x.actor())
		if err != nil {
			return nil, err
		}
		b.done += n
		if n < len(todo) {
			b.skip(todo[0].ID, len(todo)-n)
		}
		return b, nil
	}
	leased, err := x.cfg.Store.BeginReplays(ctx, x.job.ID, recordIDs(todo), x.owner, x.cfg.Lease, x.actor())
	if errors.Is(err, store.ErrConflict) {
		return nil, errLost
	}
	if err != nil {
		return nil, err
	}
	first, n := todo[0].ID, len(todo)
	b.sent, b.leases = todo[:0], leased
	for i := range todo {
		if replayID, ok := leased.ReplayIDs[todo[i].ID]; ok {
			todo[i].ReplayID = replayID
			b.sent = append(b.sent, todo[i])
		}
	}
	if skipped := n - len(b.sent); skipped > 0 {
		b.skip(first, skipped)
	}
	return b, nil
}

func recordIDs(recs []store.Record) []int64 {
	out := make([]int64, len(recs))
	for i, r := range recs {
		out[i] = r.ID
	}
	return out
}

// errNoPayload: the record holds no record to replay (store.Record.NoPayload).
var errNoPayload = errors.New("the record has no payload (its source record was gone when the worker read its dead letter): " +
	"a replay would produce a record that never existed; replay it with its value")
