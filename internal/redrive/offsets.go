package redrive

import (
	"context"
	"errors"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/dlqops/dlq/internal/redrive/routes"
	"github.com/dlqops/dlq/internal/redrive/tracker"
	"github.com/dlqops/dlq/internal/store"
)

// The ledger is the truth (seed 003). Before librdkafka may commit an offset, the worker
// writes it to the ledger (ledger_positions): the committed offset is never ahead of the
// ledger by our doing. At assignment and before each run, a committed offset ahead of the
// ledger is a forward jump (records skipped unread: an offset reset, lost offsets, a hand
// edit), one behind it a backward jump (records read again), and a start below the log
// start means records deleted before they were read. Each is logged with its range,
// counted in dlq_worker_offset_resets_total and recorded in ledger_gaps, which the audit
// reads.

// positionBatch is a write-ahead of the offsets about to be committed, handed from the
// loop to the position writer goroutine and back.
type positionBatch struct {
	parts []*partition
	pos   []store.Coordinates // Offset: the offset to commit
	err   error
}

// positionWriter writes position batches to the ledger, one at a time; it is started and
// stopped with the storers.
func (w *worker) positionWriter(ctx context.Context) {
	for {
		var b *positionBatch
		select {
		case <-ctx.Done():
			return
		case b = <-w.posIn:
		}
		cctx, cancel := context.WithTimeout(ctx, callTimeout)
		b.err = w.e.store.AdvanceLedgerPositions(cctx, w.route.Group, b.pos)
		cancel()
		select {
		case w.posOut <- b:
		case <-ctx.Done():
			return
		}
	}
}

// storeOffsets hands librdkafka (which commits them) the new watermarks the ledger already
// holds, and writes the others to the ledger first.
func (w *worker) storeOffsets() {
	// Until the first commit of a life, every turn: a crash loop should commit its first
	// acknowledged range as soon as it exists. Then once per ledgerEvery: the next life
	// resumes at the ledger (checkAssigned), so only what the ledger does not hold yet is
	// sent again after a crash.
	if w.posBusy || w.committedOnce && time.Since(w.lastCommit) < ledgerEvery {
		return
	}
	w.lastCommit = time.Now()
	var ready []*partition
	b := &positionBatch{}
	for _, p := range w.parts.byKey {
		if p.trk == nil || p.trk.Watermark() <= p.stored {
			continue
		}
		if wm := p.trk.Watermark(); wm <= p.ledgered {
			ready = append(ready, p)
		} else {
			b.parts = append(b.parts, p)
			b.pos = append(b.pos, store.Coordinates{Topic: p.key.topic, Partition: p.key.partition, Offset: wm})
		}
	}
	w.storeLedgered(ready)
	if len(b.parts) > 0 {
		w.posBusy = true
		w.posIn <- b // buffered, and the writer is idle
	}
}

// drainPositions takes the position writer's answer, if any.
func (w *worker) drainPositions() {
	select {
	case b := <-w.posOut:
		w.posBusy = false
		if b.err != nil {
			w.e.metrics.errors.WithLabelValues(w.route.Name, "ledger").Inc()
			w.health.warnEvery("ledger", b.err, "cannot write the ledger position; nothing is committed past it until PostgreSQL answers")
			return
		}
		for i, p := range b.parts {
			p.ledgered = max(p.ledgered, b.pos[i].Offset)
		}
		w.storeLedgered(b.parts)
	default:
	}
}

// storeLedgered stores, for librdkafka to commit, the watermark of each live partition up
// to its ledger position.
func (w *worker) storeLedgered(ps []*partition) {
	var tps []kafka.TopicPartition
	for _, p := range ps {
		if off := min(p.trk.Watermark(), p.ledgered); !p.gone && off > p.stored {
			p.stored = off
			tps = append(tps, kafka.TopicPartition{Topic: &p.key.topic, Partition: p.key.partition, Offset: kafka.Offset(off)})
		}
	}
	if len(tps) == 0 {
		return
	}
	if _, err := w.consumer.StoreOffsets(tps); err != nil {
		w.health.warnEvery("store_offsets", err, "cannot store offsets")
		return
	}
	// The first range of a life is committed at once, not at the next auto-commit: a
	// worker in a crash loop would otherwise redrive the same first records every life.
	if !w.committedOnce {
		w.committedOnce = true
		if _, err := w.consumer.CommitOffsets(tps); err != nil {
			w.health.warnEvery("commit", err, "first commit failed; the next auto-commit retries it")
		}
	}
}

// ledgerNow writes the watermarks of ps to the ledger synchronously, for a commit now; on
// failure the commit stops at the positions the ledger has.
func (w *worker) ledgerNow(ps []*partition) {
	var ahead []*partition
	var pos []store.Coordinates
	for _, p := range ps {
		if p.trk != nil && p.trk.Watermark() > p.ledgered {
			ahead = append(ahead, p)
			pos = append(pos, store.Coordinates{Topic: p.key.topic, Partition: p.key.partition, Offset: p.trk.Watermark()})
		}
	}
	if len(pos) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	if err := w.e.store.AdvanceLedgerPositions(ctx, w.route.Group, pos); err != nil {
		w.e.metrics.errors.WithLabelValues(w.route.Name, "ledger").Inc()
		w.health.warnEvery("ledger", err, "cannot write the ledger position; the commit stops at the last position the ledger has")
		return
	}
	for i, p := range ahead {
		p.ledgered = max(p.ledgered, pos[i].Offset)
	}
}

// positionTouchEvery is how often the worker marks the ledger positions of the partitions
// it holds as held, so that retention (retention.ledger, at least twice this) keeps the
// positions of idle partitions and drops only those nobody holds.
const positionTouchEvery = 24 * time.Hour

// touchPositions marks the ledger positions of the held partitions, after an assignment
// and then once per positionTouchEvery; a failure is retried at the next run.
func (w *worker) touchPositions(ctx context.Context) {
	if !w.touchedAt.IsZero() && time.Since(w.touchedAt) < positionTouchEvery {
		return
	}
	var pos []store.Coordinates
	for _, p := range w.parts.byKey {
		pos = append(pos, store.Coordinates{Topic: p.key.topic, Partition: p.key.partition})
	}
	if len(pos) == 0 {
		return // none held yet: the first run after the assignment marks them
	}
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	if err := w.e.store.TouchLedgerPositions(cctx, w.route.Group, pos, positionTouchEvery); err != nil {
		w.health.warnEvery("ledger", err, "cannot mark the ledger positions of the held partitions; retrying at the next run")
		return
	}
	w.touchedAt = time.Now()
}

// ledgerPositions reads the ledger's position of every partition of the route's group.
func (w *worker) ledgerPositions() (map[partKey]int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	cs, err := w.e.store.LedgerPositions(ctx, w.route.Group)
	if err != nil {
		return nil, err
	}
	out := make(map[partKey]int64, len(cs))
	for _, c := range cs {
		out[partKey{c.Topic, c.Partition}] = c.Offset
	}
	return out, nil
}

// checkAssigned compares an assigned partition's committed offset (negative: none) with
// the ledger and returns where to start reading, or false to let the consumer start where
// the group left off (earliest when nothing is known). It sets p.ledgered.
func (w *worker) checkAssigned(p *partition, committed int64, ledger map[partKey]int64) (int64, bool) {
	l := p.log(w.log)
	pos, known := ledger[p.key]
	if known {
		p.ledgered = pos
	}
	p.checked = committed
	start := committed
	switch {
	case committed < 0 && known:
		w.offsetReset(p, "not_found")
		l.Warn().Int64("ledger_offset", pos).
			Msg("no committed offset (offsets lost as in seed 003?); resuming where the ledger says the group committed")
		start = pos
	case committed < 0:
		w.offsetReset(p, "not_found")
		l.Warn().Msg("no committed offset and none in the ledger (a new group?); reading from the earliest offset, records already redriven may be redriven again")
		return 0, false
	case known && committed > pos:
		start = w.forwardJump(p, pos, committed)
	case known && committed < pos:
		// The ledger holds only watermarks (every record below redriven, parked or
		// scheduled) and positions it adopted: reading the range again would only
		// duplicate it.
		w.recordGap(p, committed, pos, store.GapBackward, false,
			"committed offset is behind the ledger (a crash after the ledger write, before the commit, or offsets moved back): every record below the ledger is done; resuming at the ledger")
		start = pos
	}
	low, _, err := w.consumer.QueryWatermarkOffsets(p.key.topic, p.key.partition, int(callTimeout/time.Millisecond))
	if err == nil && start < low {
		w.recordGap(p, start, low, store.GapBelowLogStart, true,
			"records deleted (retention) before they were read: LOST; reading from the log start")
		start = low
	}
	return start, true
}

// forwardJump handles a committed offset ahead of the ledger's position pos and returns
// where to read from: pos (rewind, the default) or committed (alarm).
func (w *worker) forwardJump(p *partition, pos, committed int64) int64 {
	if w.route.OnOffsetJump == routes.OnJumpAlarm {
		w.recordGap(p, pos, committed, store.GapJump, true,
			"committed offset jumped ahead of the ledger: records skipped unread, LOST (on_offset_jump: alarm)")
		p.ledgered = committed
		w.adopt = append(w.adopt, store.Coordinates{Topic: p.key.topic, Partition: p.key.partition, Offset: committed})
		return committed
	}
	w.recordGap(p, pos, committed, store.GapJump, false,
		"committed offset jumped ahead of the ledger: records skipped unread; rewinding to the ledger to read them")
	return pos
}

// recordGap logs a range read out of order (ERROR when records were skipped), counts it
// and records it in the ledger.
func (w *worker) recordGap(p *partition, from, to int64, cause store.GapCause, lost bool, msg string) {
	w.offsetReset(p, string(cause))
	l := p.log(w.log)
	ev := l.Warn()
	if lost || cause == store.GapJump {
		ev = l.Error()
	}
	ev.Int64("from_offset", from).Int64("to_offset", to).Int64("records", to-from).Str("cause", string(cause)).Bool("lost", lost).Msg(msg)
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	err := w.e.store.RecordGap(ctx, store.Gap{Group: w.route.Group, Route: w.route.Name, Topic: p.key.topic, Partition: p.key.partition,
		From: from, To: to, Cause: cause, Lost: lost})
	if err != nil {
		l.Error().Err(err).Int64("from_offset", from).Int64("to_offset", to).Str("cause", string(cause)).Bool("lost", lost).
			Msg("cannot record the range in the ledger: this log line is its only trace")
	}
}

// saveAdopted writes the positions the ledger learned at an assignment (partitions it did
// not know, or moved by an alarm).
func (w *worker) saveAdopted() {
	if len(w.adopt) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	if err := w.e.store.AdvanceLedgerPositions(ctx, w.route.Group, w.adopt); err != nil {
		w.health.warnEvery("ledger", err, "cannot write the ledger positions of assigned partitions")
	}
	w.adopt = w.adopt[:0]
}

// checkBeforeRun compares the committed offsets of the partitions the ledger knows with
// it, and the start of every partition with the log start, before a run reads them.
func (w *worker) checkBeforeRun() {
	var ps []*partition
	var tps []kafka.TopicPartition
	for _, p := range w.parts.byKey {
		if p.trk != nil && p.ledgered >= 0 && p.trk.Open() == 0 {
			ps = append(ps, p)
			tps = append(tps, kafka.TopicPartition{Topic: &p.key.topic, Partition: p.key.partition})
		}
	}
	if len(tps) == 0 {
		return
	}
	committed, err := w.consumer.Committed(tps, int(callTimeout/time.Millisecond))
	if err != nil {
		w.health.warnEvery("committed", err, "cannot read committed offsets; the check against the ledger waits for the next run")
		return
	}
	var rewound []*partition
	for i, p := range ps {
		c := int64(committed[i].Offset)
		from := max(p.ledgered, p.checked) // up to p.checked is already reported
		if c <= from {
			continue // behind the ledger: a commit still on its way
		}
		p.checked = c
		if start := w.forwardJump(p, from, c); start == c {
			w.restart(p, start)
		} else {
			rewound = append(rewound, p) // the consumer reads on from the watermark
		}
	}
	w.saveAdopted()
	// librdkafka does not know the jump and would not commit an offset it committed
	// before: commit the watermark explicitly, over the jump.
	if err := w.commitNow(rewound); err != nil {
		w.health.warnEvery("commit", err, "cannot commit the ledger's position over an offset jump; the next assignment rewinds again")
	}
}

// restart makes an idle partition read from off; when the consumer cannot seek, the
// partition reads on from where it is (the next check sees the same again).
func (w *worker) restart(p *partition, off int64) {
	if err := w.consumer.Seek(kafka.TopicPartition{Topic: &p.key.topic, Partition: p.key.partition, Offset: kafka.Offset(off)}, 0); err != nil {
		p.log(w.log).Error().Err(err).Int64("offset", off).Msg("seek failed")
		return
	}
	p.trk, p.stored = tracker.New(off), -1
}

// checkLogStart records the records deleted below the log start before this run reads
// them (retention while the partition waited between runs) and starts at the log start.
func (w *worker) checkLogStart(p *partition, low int64) {
	if p.trk == nil || p.trk.Open() > 0 || p.trk.Watermark() >= low {
		return
	}
	w.recordGap(p, p.trk.Watermark(), low, store.GapBelowLogStart, true,
		"records deleted (retention) before they were read: LOST; reading from the log start")
	w.restart(p, low)
}
func (w *worker) offsetReset(p *partition, cause string) {
	w.e.metrics.offsetResets.WithLabelValues(w.route.Name, p.key.topic, partitionLabel(p.key.partition), cause).Inc()
}

// commitNow writes the watermarks of ps to the ledger, then stores and synchronously
// commits them (up to the ledger's position when PostgreSQL does not answer).
func (w *worker) commitNow(ps []*partition) error {
	w.ledgerNow(ps)
	var tps []kafka.TopicPartition
	for _, p := range ps {
		if p.trk != nil && min(p.trk.Watermark(), p.ledgered) > 0 {
			p.stored = min(p.trk.Watermark(), p.ledgered)
			tps = append(tps, kafka.TopicPartition{Topic: &p.key.topic, Partition: p.key.partition, Offset: kafka.Offset(p.stored)})
		}
	}
	if len(tps) == 0 {
		return nil
	}
	// Stored too: librdkafka commits its stored offsets on revoke and close, and a stale
	// stored offset would move the committed one back.
	if _, err := w.consumer.StoreOffsets(tps); err != nil {
		return err
	}
	_, err := w.consumer.CommitOffsets(tps)
	var ke kafka.Error
	if errors.As(err, &ke) && ke.Code() == kafka.ErrNoOffset {
		return nil
	}
	return err
}
