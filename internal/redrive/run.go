package redrive

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/rs/zerolog"

	"github.com/dlqops/dlq/internal/store"
)

var (
	errRunBusy   = errors.New("a run of this route is in progress")
	errRunPaused = errors.New("route paused by an operator")
	// ErrRunInterrupted is RunNow's answer for a run that an operator's pause or a
	// shutdown ended early: what it finished is committed, the rest waits for a later run.
	ErrRunInterrupted = errors.New("run interrupted before the end of the DLQ")
	// ErrRunRebalancing is RunNow's answer for a run that ended while the group had not
	// assigned this worker its partitions (see rebalanceWait): it is incomplete.
	ErrRunRebalancing = fmt.Errorf("%w: rebalancing", ErrRunIncomplete)
)

type phase uint8

const (
	phaseDLQ    phase = iota // reading the DLQ up to the snapshot
	phaseDue                 // redriving the scheduled records that came due
	phaseDrain               // waiting for the last acknowledgements and rows
	phaseAssign              // waiting for the group's assignment before reading
)

// rebalanceWait bounds how long a run waits for the group to assign this worker its
// partitions (at its start or, after a handover mid-run, at its end) before it fails as
// rebalancing: an eager handover takes well under a second, a member that does not
// answer the rebalance holds the whole group up to its max.poll.interval.ms.
const rebalanceWait = 10 * time.Second

// runState is one bounded run: the DLQ up to its high watermark snapshot, then the due
// scheduled records, then the ledger.
type runState struct {
	id           int64
	started      time.Time
	reply        chan error
	parts        []*partition
	phase        phase
	stalledParts []stalledPart
	claim        *claimState
	next         time.Time // earliest retry of a failed PostgreSQL call
	interrupted  bool
	unread       []string  // partitions not read to their high watermark, and why
	assignBy     time.Time // while the assignment is pending: when the run gives up waiting
	rebalancing  bool      // it ended without an assignment: not a success
	topicsDone   bool      // the route's topics were checked at the end of the run
}

type stalledPart struct {
	p  *partition
	at time.Time
}

// runner drives a run through its phases (startRun, then progressRun once a loop turn),
// the due phase's claims (claims.go) and the fetch watch (fetchstall.go) included. It
// runs on the loop goroutine, which owns every field; it shares the loop's state with
// the worker and the walk.
type runner struct {
	*loopState
	route      route
	log        zerolog.Logger
	clock      func() time.Time
	store      *store.Store
	metrics    *metrics
	instanceID string
	consumer   *kafka.Consumer // kickFetch resumes a partition through it
	paused     *atomic.Bool    // runRequests': an operator's pause interrupts the run

	health   *health
	topicsOK *topicCheck
	parts    *partitions
	throttle *throttle
	sources  *sources
	park     *parker
	ledger   *ledger
	claims   *claims
	breaker  *breaker
	txn      *txn // txn.go: nil on at_least_once
}

func (w *runner) startRun(ctx context.Context, reply chan error) {
	switch {
	case w.run != nil:
		reply <- errRunBusy
		return
	case w.paused.Load():
		reply <- errRunPaused
		return
	}
	r := &runState{started: time.Now(), reply: reply}
	w.run = r
	w.breaker.startRun(w.clock())
	if !w.parts.assigned {
		// The group is rebalancing (or has not assigned this worker yet): the run reads
		// what the group settles on, or fails as rebalancing (progressRun).
		r.phase, r.assignBy = phaseAssign, r.started.Add(rebalanceWait)
		w.log.Info().Msg("run waits for the group's assignment (a rebalance in progress)")
		return
	}
	if err := w.beginReading(ctx, r); err != nil {
		w.run = nil
		reply <- err
	}
}

// beginReading checks the held partitions against the ledger and the log and starts
// reading those below their high watermark. They are resumed first: the watermark
// requests wake librdkafka's fetcher (see wakeFetcher), so the first fetch is on its way
// while the run's row is written, and the partitions with nothing to read are paused again.
func (w *runner) beginReading(ctx context.Context, r *runState) error {
	w.ledger.checkBeforeRun(w.parts)
	held := make([]*partition, 0, len(w.parts.byKey))
	for _, p := range w.parts.byKey {
		held = append(held, p)
	}
	if !w.throttle.paused {
		w.parts.switchPaused(held, false)
	}
	type todo struct {
		p           *partition
		start, high int64
	}
	var read []todo
	var idle []*partition
	lows, highs, errs := w.parts.watermarks(held)
	for i, p := range held {
		low, high := lows[i], highs[i]
		if err := errs[i]; err != nil {
			w.health.stall("watermarks", err, "cannot read a partition's high watermark; it waits for the next run")
			r.unread = append(r.unread, fmt.Sprintf("%s/%d: high watermark: %v", p.key.topic, p.key.partition, err))
			idle = append(idle, p)
			continue
		}
		w.ledger.checkLogStart(p, low)
		start := low
		if p.trk != nil {
			start = p.trk.Watermark()
		}
		w.metrics.lag.WithLabelValues(w.route.Name, p.key.topic, partitionLabel(p.key.partition)).Set(float64(max(0, high-max(start, low))))
		if start < high {
			read = append(read, todo{p: p, start: start, high: high})
		} else {
			idle = append(idle, p)
		}
	}
	w.parts.switchPaused(idle, true)
	if len(read) > 0 {
		if err := w.beginRun(ctx, r); err != nil {
			w.parts.switchPaused(held, true)
			return err
		}
	}
	w.ledger.touchPositions(ctx, w.parts)
	for _, t := range read {
		t.p.reading, t.p.hw, t.p.from, t.p.counts = true, t.high, t.start, counts{}
		r.parts = append(r.parts, t.p)
	}
	ev := w.log.Debug() // a schedule tick that finds nothing to read is not news
	if len(r.parts) > 0 {
		ev = w.log.Info()
	}
	ev.Int64("run_id", r.id).Int("partitions", len(r.parts)).Msg("run started")
	return nil
}

// beginRun writes r's row once r has work (records to read or due scheduled records): a
// run that finds nothing to do writes none until it ends (finishRun: FinishIdleRun).
func (w *runner) beginRun(ctx context.Context, r *runState) error {
	if r.id != 0 {
		return nil
	}
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	run, err := w.store.BeginRun(cctx, w.route.Name, w.instanceID)
	cancel()
	if err != nil {
		w.health.stall("store", err, "cannot begin a run; PostgreSQL does not answer")
		return fmt.Errorf("begin run: %w", err)
	}
	w.health.unstall()
	r.id = run.ID
	return nil
}

func (w *runner) progressRun(ctx context.Context) {
	r := w.run
	if w.paused.Load() && !r.interrupted {
		w.interruptRun("paused by an operator")
	}
	now := time.Now()
	kept := r.stalledParts[:0]
	for _, s := range r.stalledParts {
		switch {
		case s.p.gone || r.interrupted:
		case now.Before(s.at):
			kept = append(kept, s)
		default:
			s.p.reading = true
			if !w.throttle.paused {
				w.parts.setPaused([]*partition{s.p}, false)
			}
		}
	}
	r.stalledParts = kept
	if r.phase == phaseAssign {
		switch {
		case r.interrupted:
			r.phase = phaseDrain
		case w.parts.assigned:
			r.phase, r.assignBy = phaseDLQ, time.Time{}
			if err := w.beginReading(ctx, r); err != nil {
				w.run = nil
				r.reply <- err
				return
			}
		case now.After(r.assignBy):
			w.endRebalancing(r)
		default:
			return
		}
	}
	if r.phase == phaseDLQ {
		w.watchFetches(r, now)
		if w.throttle.held != nil || len(r.stalledParts) > 0 || w.parts.anyReading() {
			return
		}
		w.breaker.endDLQPhase(w.clock())
		r.phase = phaseDue
	}
	if now.Before(r.next) {
		return
	}
	if r.phase == phaseDue {
		if r.interrupted {
			r.phase = phaseDrain
		} else if w.progressClaims(ctx) {
			r.phase = phaseDrain
		}
	}
	if r.phase == phaseDrain && w.inFlight == 0 && w.park.idle() && len(w.retries) == 0 {
		if !w.parts.assigned && !r.interrupted && !r.rebalancing {
			// Its partitions were revoked mid-run: wait for the group's new assignment.
			if r.assignBy.IsZero() {
				r.assignBy = now.Add(rebalanceWait)
				w.log.Info().Int64("run_id", r.id).Msg("run waits for the group's assignment before it ends (a rebalance in progress)")
			}
			if now.Before(r.assignBy) {
				return
			}
			w.endRebalancing(r)
		}
		if w.txn != nil && !w.txn.settle(w.parts) {
			return // the run's last records commit before its ledger rows say they are done
		}
		w.finishRun(ctx)
	}
}

// endRebalancing makes r end as rebalancing: the group assigned this worker nothing
// within rebalanceWait, so nobody can say its partitions were read.
func (w *runner) endRebalancing(r *runState) {
	r.rebalancing, r.phase = true, phaseDrain
	r.unread = append(r.unread, fmt.Sprintf("rebalancing: the group assigned this worker no partitions within %s (a rebalance in progress, or partitions revoked and none assigned since)", rebalanceWait))
	w.log.Warn().Int64("run_id", r.id).Dur("waited_ms", time.Since(r.started)).
		Msg("run fails as rebalancing: the group's rebalance did not end; last success stays put")
}

// interruptRun stops reading (operator pause, shutdown): the run ends with what is done.
func (w *runner) interruptRun(why string) {
	r := w.run
	r.interrupted = true
	r.stalledParts = nil
	for _, p := range w.parts.reading() {
		w.parts.stopReading(p)
	}
	w.log.Info().Int64("run_id", r.id).Str("why", why).Msg("run interrupted")
}

// finishRun ends the run: its ledger rows, the ledger positions of its last watermarks
// and its finish in one PostgreSQL transaction, then the commit.
func (w *runner) finishRun(ctx context.Context) {
	r := w.run
	var live []*partition
	for _, p := range r.parts {
		if !p.gone {
			live = append(live, p)
		}
	}
	if !r.topicsDone { // once: the end below may be retried
		r.topicsDone = true
		if err := w.topicsOK.missing(callTimeout); err != nil {
			r.unread = append(r.unread, err.Error())
		}
	}
	status, msg := store.RunSucceeded, ""
	switch {
	case r.interrupted:
		status, msg = store.RunFailed, "interrupted"
	case len(r.unread) > 0:
		status, msg = store.RunFailed, "not read to the high watermark: "+strings.Join(r.unread, "; ")
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), callTimeout)
	defer cancel()
	var err error
	if r.id == 0 {
		err = w.store.FinishIdleRun(cctx, w.route.Name, w.instanceID, time.Since(r.started), status, msg)
	} else {
		err = w.endRun(cctx, r, live, status, msg)
	}
	// Also when PostgreSQL does not answer: up to what the ledger already holds.
	if cerr := w.ledger.commitLedgered(live); cerr != nil {
		// librdkafka commits the stored offsets again on its next auto-commit.
		w.health.warnEvery("commit", cerr, "commit at the end of the run failed; it is retried in the background")
	}
	if err != nil {
		r.next = time.Now().Add(w.health.stall("store", err, "cannot end the run in PostgreSQL (its ledger and finish); retrying"))
		return
	}
	w.health.unstall()
	elapsed := time.Since(r.started)
	outcome := string(status)
	if r.rebalancing {
		outcome = "rebalancing"
	}
	w.metrics.runDuration.WithLabelValues(w.route.Name, outcome).Observe(elapsed.Seconds())
	if status == store.RunSucceeded {
		w.metrics.lastSuccess.WithLabelValues(w.route.Name).Set(float64(w.clock().Unix()))
	}
	var total counts
	for _, p := range live {
		total.redriven += p.counts.redriven
		total.scheduled += p.counts.scheduled
		total.parked += p.counts.parked
		done := p.from // nothing read yet (a new group's partition in an interrupted run): no tracker
		if p.trk != nil {
			done = p.trk.Watermark()
		}
		w.metrics.lag.WithLabelValues(w.route.Name, p.key.topic, partitionLabel(p.key.partition)).Set(float64(max(0, p.hw-done)))
	}
	ev := w.log.Info()
	if r.id == 0 && status == store.RunSucceeded {
		ev = w.log.Debug()
	}
	ev.Int64("run_id", r.id).Dur("elapsed_ms", elapsed).Int64("redriven", total.redriven).
		Int64("scheduled", total.scheduled).Int64("parked", total.parked).Str("status", outcome).Str("error", msg).Msg("run finished")
	w.run = nil
	w.sources.release()
	switch {
	case r.interrupted:
		r.reply <- ErrRunInterrupted
	case r.rebalancing:
		r.reply <- fmt.Errorf("%w: %s", ErrRunRebalancing, msg)
	case len(r.unread) > 0:
		r.reply <- fmt.Errorf("%w: %s", ErrRunIncomplete, msg)
	default:
		r.reply <- nil
	}
}

// endRun writes the end of run r, which read live: the ledger row of each partition not
// written yet, the positions of their watermarks past the ledger, and its status.
func (w *runner) endRun(ctx context.Context, r *runState, live []*partition, status store.RunStatus, msg string) error {
	ahead, pos := aheadOfLedger(live)
	e := store.RunEnd{ID: r.id, Status: status, Error: msg, Group: w.route.Group, Positions: pos}
	for _, p := range live {
		if p.trk != nil && !p.counts.ledgerDone {
			e.Ledger = append(e.Ledger, ledgerEntry(r, p))
		}
	}
	if err := w.store.EndRun(ctx, e); err != nil && !errors.Is(err, store.ErrConflict) {
		return err
	}
	for i, p := range ahead {
		w.ledger.landed(p, pos[i].Offset)
	}
	flushed(live) // a synchronous commit
	for _, p := range live {
		p.counts.ledgerDone = true
	}
	return nil
}

// recordLedger writes p's range of run r, once.
func (w *runner) recordLedger(ctx context.Context, r *runState, p *partition) error {
	if p.trk == nil || p.counts.ledgerDone {
		return nil
	}
	if err := w.store.RecordLedger(ctx, ledgerEntry(r, p)); err != nil && !errors.Is(err, store.ErrConflict) {
		return err
	}
	p.counts.ledgerDone = true
	return nil
}

// ledgerEntry is p's range of run r: from where the run started on it to its watermark.
func ledgerEntry(r *runState, p *partition) store.LedgerEntry {
	c := p.counts
	e := store.LedgerEntry{RunID: r.id, Topic: p.key.topic, Partition: p.key.partition, From: p.from, To: max(p.trk.Watermark(), p.from),
		Redriven: c.redriven, Scheduled: c.scheduled, Parked: c.parked, Errors: c.errors}
	e.Skipped = max(0, e.To-e.From-c.redriven-c.scheduled-c.parked)
	return e
}
