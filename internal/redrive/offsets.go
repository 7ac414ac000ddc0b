package redrive

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/rs/zerolog"

	"github.com/dlqops/dlq/internal/lifecycle"
	"github.com/dlqops/dlq/internal/redrive/tracker"
	"github.com/dlqops/dlq/internal/routes"
	"github.com/dlqops/dlq/internal/store"
)

// The ledger is the truth: a group's committed offsets can be reset, lost or rewound
// behind the worker's back. Before librdkafka may commit an offset, the worker
// writes it to the ledger (ledger_positions) and has PostgreSQL confirm it flushed: the
// committed offset is never ahead of the durable ledger by our doing. The position writes
// themselves do not wait for the flush (an asynchronous commit, visible at once): a flush
// that takes long holds the commit back, not the records (see flushLedger). At assignment
// and before each run, a committed offset ahead of the ledger is a forward jump (records
// skipped unread: an offset reset, lost offsets, a hand edit), one behind it a backward
// jump (records read again), and a start below the log start means records deleted
// before they were read. Each is logged with its range, counted in
// dlq_worker_offset_resets_total and recorded in ledger_gaps, which the audit reads.

// ledgerStore is the ledger's part of the store (store.Ledger): the positions it writes,
// flushes, refreshes and reads back, and the gaps it records.
type ledgerStore interface {
	AdvanceLedgerPositions(ctx context.Context, group string, pos []store.Coordinates) error
	AdvanceLedgerPositionsUnflushed(ctx context.Context, group string, pos []store.Coordinates) error
	FlushLedger(ctx context.Context, group string) error
	TouchLedgerPositions(ctx context.Context, group string, pos []store.Coordinates, fresh time.Duration) error
	LedgerPositions(ctx context.Context, group string) ([]store.Coordinates, error)
	RecordGap(ctx context.Context, g store.Gap) error
}

var _ ledgerStore = (*store.Ledger)(nil)

// ledger keeps the route's committed offsets behind the ledger's positions and checks
// them against it. It is owned by the loop goroutine, but for its position writer and
// flusher goroutines, which share posIn/posOut and flushIn/flushOut with it and run
// between Start and Stop.
type ledger struct {
	consumer *kafka.Consumer // stores and commits; reads committed offsets and watermarks
	store    ledgerStore
	group    string
	route    string
	onJump   string // the route's on_offset_jump
	log      zerolog.Logger
	health   *health
	metrics  *metrics // errors, offsetResets
	life     lifecycle.Base

	// transactional: delivery exactly_once, where offsets commit only in the route's
	// transactions (txn.go) and a position past the committed offset is a transaction
	// that did not commit.
	transactional bool

	// The position writer's input and output: one batch at a time (posBusy).
	posIn         chan *positionBatch
	posOut        chan *positionBatch
	posBusy       bool
	lastCommit    time.Time
	committedOnce bool // this life committed its first range (see storeLedgered)
	// The flusher's input and output: one flush at a time (flushBusy).
	flushIn   chan *positionBatch
	flushOut  chan *positionBatch
	flushBusy bool
	lastFlush time.Time
	adopt     []*partition // positions an assignment learned (ledgered), written at its end
	touchedAt time.Time    // last touchPositions; zero after an assignment
	windowMax int64        // a partition's widest window past the ledger (throttle.go)
}

func newLedger(c *kafka.Consumer, st ledgerStore, r route, log zerolog.Logger, h *health, m *metrics) *ledger {
	return &ledger{consumer: c, store: st, group: r.Group, route: r.Name, onJump: r.OnOffsetJump, transactional: r.Delivery == routes.DeliveryExactlyOnce,
		log: log, health: h, metrics: m,
		posIn: make(chan *positionBatch, 1), posOut: make(chan *positionBatch, 1),
		flushIn: make(chan *positionBatch, 1), flushOut: make(chan *positionBatch, 1), windowMax: int64(max(r.MaxInFlight, windowStart))}
}

// Start starts the position writer and the flusher; their work ends with ctx too.
func (l *ledger) Start(ctx context.Context) error {
	if _, err := l.life.Start(ctx); err != nil {
		return err
	}
	l.life.Go(l.positionWriter)
	l.life.Go(l.flusher)
	return nil
}

// Stop stops the position writer and the flusher; a position they have not written or
// flushed yet is not committed.
func (l *ledger) Stop(ctx context.Context) error { return l.life.Stop(ctx) }

// positionBatch is a write-ahead of the offsets about to be committed, handed from the
// loop to the position writer goroutine and back; or, for the flusher, the positions
// that had landed when it started.
type positionBatch struct {
	parts []*partition
	pos   []store.Coordinates // Offset: the offset to commit
	err   error
}

// positionWriter writes position batches to the ledger, one at a time.
func (l *ledger) positionWriter(ctx context.Context) {
	serveBatches(ctx, l.posIn, l.posOut, func(ctx context.Context, b *positionBatch) error {
		return l.store.AdvanceLedgerPositionsUnflushed(ctx, l.group, b.pos)
	})
}

// flusher has PostgreSQL confirm, one batch at a time, that the positions of a batch are
// flushed: they landed before its synchronous commit began.
func (l *ledger) flusher(ctx context.Context) {
	serveBatches(ctx, l.flushIn, l.flushOut, func(ctx context.Context, _ *positionBatch) error {
		return l.store.FlushLedger(ctx, l.group)
	})
}

// serveBatches answers each batch of in on out with what call returned for it, one at a
// time, each call bounded by callTimeout, until ctx ends.
func serveBatches(ctx context.Context, in <-chan *positionBatch, out chan<- *positionBatch, call func(context.Context, *positionBatch) error) {
	for {
		var b *positionBatch
		select {
		case <-ctx.Done():
			return
		case b = <-in:
		}
		cctx, cancel := context.WithTimeout(ctx, callTimeout)
		b.err = call(cctx, b)
		cancel()
		select {
		case out <- b:
		case <-ctx.Done():
			return
		}
	}
}

// storeOffsets hands librdkafka (which commits them) the new watermarks the ledger already
// holds flushed, writes the others to the ledger first and has the landed ones flushed.
func (l *ledger) storeOffsets(parts *partitions) {
	if l.transactional {
		return // the route's transactions commit (txn.go)
	}
	l.flushLedger(parts)
	// Until the first commit of a life, every turn: a crash loop should commit its first
	// acknowledged range as soon as it exists. Then once per ledgerEvery: the next life
	// resumes at the ledger (checkAssigned), so only what the ledger does not hold yet is
	// sent again after a crash.
	if l.posBusy || l.committedOnce && time.Since(l.lastCommit) < ledgerEvery {
		return
	}
	l.lastCommit = time.Now()
	var ready []*partition
	b := &positionBatch{}
	for _, p := range parts.byKey {
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
	l.storeLedgered(ready)
	if len(b.parts) > 0 {
		l.posBusy = true
		l.posIn <- b // buffered, and the writer is idle
	}
}

// flushLedger has the flusher confirm the positions that landed and are not known
// flushed: at once for the first range of a life, then once per commitInterval (what
// librdkafka's auto-commit waits anyway), so that a flush costs one synchronous commit
// per commit, not one per position write.
func (l *ledger) flushLedger(parts *partitions) {
	if l.flushBusy || l.committedOnce && time.Since(l.lastFlush) < commitInterval {
		return
	}
	b := &positionBatch{}
	for _, p := range parts.byKey {
		if p.ledgered > p.durable && p.trk != nil && p.trk.Watermark() > p.stored {
			b.parts = append(b.parts, p)
			b.pos = append(b.pos, store.Coordinates{Topic: p.key.topic, Partition: p.key.partition, Offset: p.ledgered})
		}
	}
	if len(b.parts) == 0 {
		return
	}
	l.lastFlush = time.Now()
	l.flushBusy = true
	l.flushIn <- b // buffered, and the flusher is idle
}

// drainPositions takes the position writer's and the flusher's answers, if any.
func (l *ledger) drainPositions() {
	select {
	case b := <-l.posOut:
		l.onPositions(b)
	default:
	}
	select {
	case b := <-l.flushOut:
		l.onFlushed(b)
	default:
	}
}

// onFlushed takes the flusher's answer b: its positions are durable, and committed.
func (l *ledger) onFlushed(b *positionBatch) {
	l.flushBusy = false
	if b.err != nil {
		l.failed(b.err, flushFailedMsg)
		return
	}
	for i, p := range b.parts {
		p.durable = max(p.durable, b.pos[i].Offset)
	}
	l.storeLedgered(b.parts)
}

// onPositions takes the position writer's answer b.
func (l *ledger) onPositions(b *positionBatch) {
	l.posBusy = false
	if b.err != nil {
		l.failed(b.err, "cannot write the ledger position; nothing is committed past it until PostgreSQL answers")
		return
	}
	for i, p := range b.parts {
		l.landed(p, b.pos[i].Offset)
	}
}

// failed counts and reports a ledger write or flush PostgreSQL did not answer.
func (l *ledger) failed(err error, msg string) {
	l.metrics.errors.WithLabelValues(l.route, "ledger").Inc()
	l.health.warnEvery("ledger", err, msg)
}

const flushFailedMsg = "cannot have PostgreSQL flush the ledger; nothing is committed past what it flushed until it answers"

// landed notes that the ledger holds pos for p, and widens p's window past it.
func (l *ledger) landed(p *partition, pos int64) {
	p.ledgered = max(p.ledgered, pos)
	p.window = min(2*p.window, l.windowMax)
}

// flushed notes that a synchronous commit returned: the positions of ps that had landed
// before it are durable.
func flushed(ps []*partition) {
	for _, p := range ps {
		p.durable = max(p.durable, p.ledgered)
	}
}

// storeLedgered stores, for librdkafka to commit, the watermark of each live partition up
// to its durable ledger position.
func (l *ledger) storeLedgered(ps []*partition) {
	var tps []kafka.TopicPartition
	for _, p := range ps {
		if off := min(p.trk.Watermark(), p.durable); !p.gone && off > p.stored {
			p.stored = off
			tps = append(tps, kafka.TopicPartition{Topic: &p.key.topic, Partition: p.key.partition, Offset: kafka.Offset(off)})
		}
	}
	if len(tps) == 0 {
		return
	}
	if _, err := l.consumer.StoreOffsets(tps); err != nil {
		l.health.warnEvery("store_offsets", err, "cannot store offsets")
		return
	}
	// The first range of a life is committed at once, not at the next auto-commit: a
	// worker in a crash loop would otherwise redrive the same first records every life.
	if !l.committedOnce {
		l.committedOnce = true
		if _, err := l.consumer.CommitOffsets(tps); err != nil {
			l.health.warnEvery("commit", err, "first commit failed; the next auto-commit retries it")
		}
	}
}

// ledgerNow writes the watermarks of ps to the ledger synchronously, for a commit now; on
// failure the commit stops at the positions the ledger has.
func (l *ledger) ledgerNow(ps []*partition) {
	ahead, pos := aheadOfLedger(ps)
	if len(pos) == 0 {
		// Nothing to write: a flush makes what landed durable, if anything is not.
		if !slices.ContainsFunc(ps, func(p *partition) bool { return p.ledgered > p.durable }) || !l.flushNow() {
			return
		}
		flushed(ps)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	if err := l.store.AdvanceLedgerPositions(ctx, l.group, pos); err != nil {
		l.failed(err, "cannot write the ledger position; the commit stops at the last position the ledger has flushed")
		return
	}
	for i, p := range ahead {
		l.landed(p, pos[i].Offset)
	}
	flushed(ps)
}

// aheadOfLedger returns the partitions of ps whose watermark is past the ledger's
// position, and their watermarks as the positions to write.
func aheadOfLedger(ps []*partition) (ahead []*partition, pos []store.Coordinates) {
	for _, p := range ps {
		if p.trk != nil && p.trk.Watermark() > p.ledgered {
			ahead = append(ahead, p)
			pos = append(pos, store.Coordinates{Topic: p.key.topic, Partition: p.key.partition, Offset: p.trk.Watermark()})
		}
	}
	return ahead, pos
}

// positionTouchEvery is how often the worker marks the ledger positions of the partitions
// it holds as held, so that retention (retention.ledger, at least twice this) keeps the
// positions of idle partitions and drops only those nobody holds.
const positionTouchEvery = 24 * time.Hour

// touchPositions marks the ledger positions of the held partitions, after an assignment
// and then once per positionTouchEvery; a failure is retried at the next run.
func (l *ledger) touchPositions(ctx context.Context, parts *partitions) {
	if !l.touchedAt.IsZero() && time.Since(l.touchedAt) < positionTouchEvery {
		return
	}
	var pos []store.Coordinates
	for _, p := range parts.byKey {
		pos = append(pos, store.Coordinates{Topic: p.key.topic, Partition: p.key.partition})
	}
	if len(pos) == 0 {
		return // none held yet: the first run after the assignment marks them
	}
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	if err := l.store.TouchLedgerPositions(cctx, l.group, pos, positionTouchEvery); err != nil {
		l.health.warnEvery("ledger", err, "cannot mark the ledger positions of the held partitions; retrying at the next run")
		return
	}
	l.touchedAt = time.Now()
}

// assigned checks the partitions of an assignment against the ledger and returns them
// with where each starts, which it also sets in tps, and those of them that resume at
// the ledger's position ahead of their committed offset (to commit once assigned).
func (l *ledger) assigned(tps []kafka.TopicPartition) (ps, ahead []*partition) {
	committed, err := l.consumer.Committed(tps, int(callTimeout/time.Millisecond))
	if err != nil {
		l.health.warnEvery("committed", err, "cannot read committed offsets; consumption starts where the group left off, unchecked against the ledger")
	}
	positions, lerr := l.ledgerPositions()
	if lerr != nil {
		l.health.warnEvery("ledger", lerr, "cannot read the ledger positions; offset jumps at this assignment go unchecked")
	}
	for i, tp := range tps {
		p := &partition{key: partKey{*tp.Topic, tp.Partition}, stored: -1, ledgered: -1, durable: -1, window: windowStart}
		if err == nil && lerr == nil {
			if start, ok := l.checkAssigned(p, int64(committed[i].Offset), positions); ok {
				p.trk, p.stored = tracker.New(start), start
				tps[i].Offset = kafka.Offset(start)
				if start > int64(committed[i].Offset) && (start == p.ledgered || l.transactional) {
					ahead = append(ahead, p) // resumed at the ledger (or the log start): committed below
				}
				if _, known := positions[p.key]; !known {
					p.ledgered = start
					l.adopt = append(l.adopt, p)
				}
			}
		} else if err == nil && committed[i].Offset >= 0 {
			off := int64(committed[i].Offset)
			p.trk, p.stored = tracker.New(off), off
		}
		ps = append(ps, p)
	}
	// A previous life may have written the positions read without waiting for their
	// flush: they are durable once a synchronous commit after them returns (the one that
	// writes what the assignment adopted, or a flush).
	if l.saveAdopted() || l.flushNow() {
		flushed(ps)
	}
	l.touchedAt = time.Time{}
	return ps, ahead
}

// flushNow has PostgreSQL flush the ledger and reports whether it did.
func (l *ledger) flushNow() bool {
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	if err := l.store.FlushLedger(ctx, l.group); err != nil {
		l.failed(err, flushFailedMsg)
		return false
	}
	return true
}

// ledgerPositions reads the ledger's position of every partition of the route's group.
func (l *ledger) ledgerPositions() (map[partKey]int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	cs, err := l.store.LedgerPositions(ctx, l.group)
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
func (l *ledger) checkAssigned(p *partition, committed int64, positions map[partKey]int64) (int64, bool) {
	pl := p.log(l.log)
	pos, known := positions[p.key]
	if known {
		p.ledgered = pos
	}
	p.checked = committed
	start := committed
	switch {
	case committed < 0 && known:
		l.offsetReset(p, "not_found")
		pl.Warn().Int64("ledger_offset", pos).
			Msg("no committed offset (expired or deleted?); resuming where the ledger says the group committed")
		start = pos
	case committed < 0 && l.transactional:
		// Committed at once (worker.assign): the ledger never holds a position of a
		// partition without a committed offset, which a transaction that did not commit
		// would leave ahead of records never visible.
		l.offsetReset(p, "not_found")
		low, _, err := l.consumer.QueryWatermarkOffsets(p.key.topic, p.key.partition, int(callTimeout/time.Millisecond))
		if err != nil {
			pl.Error().Err(err).Msg("no committed offset and none in the ledger, and the log start unknown: reading from the earliest offset, uncommitted until the first transaction")
			return 0, false
		}
		pl.Warn().Int64("log_start_offset", low).Msg("no committed offset and none in the ledger (a new group?); reading from the log start, committed now")
		return low, true
	case committed < 0:
		l.offsetReset(p, "not_found")
		pl.Warn().Msg("no committed offset and none in the ledger (a new group?); reading from the earliest offset, records already redriven may be redriven again")
		return 0, false
	case known && committed > pos:
		start = l.forwardJump(p, pos, committed)
	case known && committed < pos && l.transactional:
		// The ledger takes a transaction's offsets before it commits: behind the ledger
		// is a transaction that never committed, its records never visible to
		// read_committed consumers, so they are read again.
		pl.Info().Int64("ledger_offset", pos).Int64("records", pos-committed).
			Msg("committed offset behind the ledger: a transaction that did not commit (exactly_once); reading its records again")
	case known && committed < pos:
		// The ledger holds only watermarks (every record below redriven, parked or
		// scheduled) and positions it adopted: reading the range again would only
		// duplicate it.
		l.recordGap(p, committed, pos, store.GapBackward, false,
			"committed offset is behind the ledger (a crash after the ledger write, before the commit, or offsets moved back): every record below the ledger is done; resuming at the ledger")
		start = pos
	}
	low, _, err := l.consumer.QueryWatermarkOffsets(p.key.topic, p.key.partition, int(callTimeout/time.Millisecond))
	if err == nil && start < low {
		l.recordGap(p, start, low, store.GapBelowLogStart, true,
			"records deleted (retention) before they were read: LOST; reading from the log start")
		start = low
	}
	return start, true
}

// forwardJump handles a committed offset ahead of the ledger's position pos and returns
// where to read from: pos (rewind, the default) or committed (alarm).
func (l *ledger) forwardJump(p *partition, pos, committed int64) int64 {
	if l.onJump == routes.OnJumpAlarm {
		l.recordGap(p, pos, committed, store.GapJump, true,
			"committed offset jumped ahead of the ledger: records skipped unread, LOST (on_offset_jump: alarm)")
		p.ledgered = committed
		l.adopt = append(l.adopt, p)
		return committed
	}
	l.recordGap(p, pos, committed, store.GapJump, false,
		"committed offset jumped ahead of the ledger: records skipped unread; rewinding to the ledger to read them")
	return pos
}

// recordGap logs a range read out of order (ERROR when records were skipped), counts it
// and records it in the ledger.
func (l *ledger) recordGap(p *partition, from, to int64, cause store.GapCause, lost bool, msg string) {
	l.offsetReset(p, string(cause))
	pl := p.log(l.log)
	ev := pl.Warn()
	if lost || cause == store.GapJump {
		ev = pl.Error()
	}
	ev.Int64("from_offset", from).Int64("to_offset", to).Int64("records", to-from).Str("cause", string(cause)).Bool("lost", lost).Msg(msg)
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	err := l.store.RecordGap(ctx, store.Gap{Group: l.group, Route: l.route, Topic: p.key.topic, Partition: p.key.partition,
		From: from, To: to, Cause: cause, Lost: lost})
	if err != nil {
		pl.Error().Err(err).Int64("from_offset", from).Int64("to_offset", to).Str("cause", string(cause)).Bool("lost", lost).
			Msg("cannot record the range in the ledger: this log line is its only trace")
	}
}

// saveAdopted writes the positions the ledger learned (partitions it did not know at an
// assignment, or moved by an alarm) and reports whether it did: in a synchronous commit,
// so they are durable, and every position written before them too.
func (l *ledger) saveAdopted() bool {
	if len(l.adopt) == 0 {
		return false
	}
	adopted := l.adopt
	l.adopt = nil
	pos := make([]store.Coordinates, len(adopted))
	for i, p := range adopted {
		pos[i] = store.Coordinates{Topic: p.key.topic, Partition: p.key.partition, Offset: p.ledgered}
	}
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	if err := l.store.AdvanceLedgerPositions(ctx, l.group, pos); err != nil {
		l.health.warnEvery("ledger", err, "cannot write the ledger positions of assigned partitions")
		return false
	}
	flushed(adopted)
	return true
}

// checkBeforeRun compares the committed offsets of the partitions the ledger knows with
// it, and the start of every partition with the log start, before a run reads them.
func (l *ledger) checkBeforeRun(parts *partitions) {
	var ps []*partition
	var tps []kafka.TopicPartition
	for _, p := range parts.byKey {
		if p.trk != nil && p.ledgered >= 0 && p.trk.Open() == 0 {
			ps = append(ps, p)
			tps = append(tps, kafka.TopicPartition{Topic: &p.key.topic, Partition: p.key.partition})
		}
	}
	if len(tps) == 0 {
		return
	}
	committed, err := l.consumer.Committed(tps, int(callTimeout/time.Millisecond))
	if err != nil {
		l.health.warnEvery("committed", err, "cannot read committed offsets; the check against the ledger waits for the next run")
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
		if start := l.forwardJump(p, from, c); start == c {
			l.restart(p, start)
		} else {
			rewound = append(rewound, p) // the consumer reads on from the watermark
		}
	}
	l.saveAdopted()
	// librdkafka does not know the jump and would not commit an offset it committed
	// before: commit the watermark explicitly, over the jump.
	if err := l.commitNow(rewound); err != nil {
		l.health.warnEvery("commit", err, "cannot commit the ledger's position over an offset jump; the next assignment rewinds again")
	}
}

// restart makes an idle partition read from off; when the consumer cannot seek, the
// partition reads on from where it is (the next check sees the same again).
func (l *ledger) restart(p *partition, off int64) {
	if err := l.consumer.Seek(kafka.TopicPartition{Topic: &p.key.topic, Partition: p.key.partition, Offset: kafka.Offset(off)}, 0); err != nil {
		p.log(l.log).Error().Err(err).Int64("offset", off).Msg("seek failed")
		return
	}
	p.trk, p.stored = tracker.New(off), -1
}

// checkLogStart records the records deleted below the log start before this run reads
// them (retention while the partition waited between runs) and starts at the log start.
func (l *ledger) checkLogStart(p *partition, low int64) {
	if p.trk == nil || p.trk.Open() > 0 || p.trk.Watermark() >= low {
		return
	}
	l.recordGap(p, p.trk.Watermark(), low, store.GapBelowLogStart, true,
		"records deleted (retention) before they were read: LOST; reading from the log start")
	l.restart(p, low)
}
func (l *ledger) offsetReset(p *partition, cause string) {
	l.metrics.offsetResets.WithLabelValues(l.route, p.key.topic, partitionLabel(p.key.partition), cause).Inc()
}

// commitNow writes the watermarks of ps to the ledger, then stores and synchronously
// commits them (up to the ledger's position when PostgreSQL does not answer).
func (l *ledger) commitNow(ps []*partition) error {
	l.ledgerNow(ps)
	return l.commitLedgered(ps)
}

// commitLedgered stores and synchronously commits the watermarks of ps up to the
// ledger's durable positions.
func (l *ledger) commitLedgered(ps []*partition) error {
	if l.transactional {
		return nil // only the route's transactions commit (txn.go)
	}
	var tps []kafka.TopicPartition
	for _, p := range ps {
		if p.trk != nil && min(p.trk.Watermark(), p.durable) > 0 {
			p.stored = min(p.trk.Watermark(), p.durable)
			tps = append(tps, kafka.TopicPartition{Topic: &p.key.topic, Partition: p.key.partition, Offset: kafka.Offset(p.stored)})
		}
	}
	if len(tps) == 0 {
		return nil
	}
	// Stored too: librdkafka commits its stored offsets on revoke and close, and a stale
	// stored offset would move the committed one back.
	if _, err := l.consumer.StoreOffsets(tps); err != nil {
		return err
	}
	_, err := l.consumer.CommitOffsets(tps)
	var ke kafka.Error
	if errors.As(err, &ke) && ke.Code() == kafka.ErrNoOffset {
		return nil
	}
	return err
}
