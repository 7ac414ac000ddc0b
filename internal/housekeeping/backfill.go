package housekeeping

import (
	"context"
	"time"
)

// Records stored before fingerprints existed have none, so incidents left them out. The
// leading worker gives them theirs in batches of ids on the primary key, a bounded number
// of batches per pass, from the lowest id to the highest id when the sweep began: every
// record stored since has its fingerprint from the start. The cursor lives in memory; a
// worker that takes over the lead sweeps again, and a record filled twice is filled once.
const (
	backfillBatch          = 5000 // ids per batch: one short transaction each
	backfillBatchesPerPass = 20
)

type fingerprintBackfill struct {
	after, until int64 // the ids (after, until] are left; until 0: not started
	done         bool
}

// backfillFingerprints runs up to backfillBatchesPerPass batches of the sweep. A failure
// is counted and logged; the next pass goes on from the same batch.
func (h *Housekeeper) backfillFingerprints(ctx context.Context) {
	b := &h.backfill
	if b.done {
		return
	}
	if b.until == 0 {
		until, err := h.store.MaxRecordID(ctx)
		if err != nil {
			h.backfillFailed(ctx, err)
			return
		}
		if until == 0 {
			b.done = true // an empty table: nothing was stored before fingerprints
			return
		}
		b.until = until
	}
	start := time.Now()
	var filled int64
	for i := 0; i < backfillBatchesPerPass && b.after < b.until; i++ {
		next := min(b.after+backfillBatch, b.until)
		n, err := h.store.BackfillFingerprints(ctx, b.after, next)
		if err != nil {
			h.backfillFailed(ctx, err)
			break
		}
		b.after = next
		filled += n
		h.backfilled.Add(float64(n))
	}
	if filled > 0 {
		h.log.Info().Int64("records", filled).Int64("through_id", b.after).Int64("until_id", b.until).
			Int64("elapsed_ms", time.Since(start).Milliseconds()).Msg("gave records stored before fingerprints existed their fingerprint")
	}
	if b.after >= b.until {
		b.done = true
		h.log.Debug().Int64("until_id", b.until).Msg("fingerprint backfill finished")
	}
}

func (h *Housekeeper) backfillFailed(ctx context.Context, err error) {
	if ctx.Err() != nil {
		return
	}
	h.errs.WithLabelValues("backfill").Inc()
	h.log.Warn().Err(err).Msg("cannot backfill fingerprints; the next pass goes on from the same batch")
}
