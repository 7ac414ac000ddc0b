package redrive

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/dlqops/dlq/internal/delivery"
	"github.com/dlqops/dlq/internal/headers"
	"github.com/dlqops/dlq/internal/redrive/tracker"
	"github.com/dlqops/dlq/internal/store"
)

var (
	errRunBusy   = errors.New("a run of this route is in progress")
	errRunPaused = errors.New("route paused by an operator")
	// ErrRunInterrupted is RunNow's answer for a run that an operator's pause or a
	// shutdown ended early: what it finished is committed, the rest waits for a later run.
	ErrRunInterrupted = errors.New("run interrupted before the end of the DLQ")
)

type phase uint8

const (
	phaseDLQ   phase = iota // reading the DLQ up to the snapshot
	phaseDue                // redriving the scheduled records that came due
	phaseDrain              // waiting for the last acknowledgements and rows
)

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
	unread       []string // partitions not read to their high watermark, and why
	topicsDone   bool     // the route's topics were checked at the end of the run
}

type stalledPart struct {
	p  *partition
	at time.Time
}

// claimState is a batch of due scheduled rows leased from PostgreSQL.
type claimState struct {
	token       string
	pending     []store.Record
	outstanding int
	done        []store.Redriven
	park        map[store.Reason][]int64
	release     []int64
}

// claimed is the Opaque of a produced scheduled record.
type claimed struct {
	c   *claimState
	rec store.Record
}

func (w *worker) startRun(ctx context.Context, reply chan error) {
	switch {
	case w.run != nil:
		reply <- errRunBusy
		return
	case w.paused.Load():
		reply <- errRunPaused
		return
	}
	r := &runState{started: time.Now(), reply: reply}
	w.touchPositions(ctx)
	w.checkBeforeRun()
	type todo struct {
		p           *partition
		start, high int64
	}
	var read []todo
	for _, p := range w.parts {
		low, high, err := w.consumer.QueryWatermarkOffsets(p.key.topic, p.key.partition, int(callTimeout/time.Millisecond))
		if err != nil {
			w.stall("watermarks", err, "cannot read a partition's high watermark; it waits for the next run")
			r.unread = append(r.unread, fmt.Sprintf("%s/%d: high watermark: %v", p.key.topic, p.key.partition, err))
			continue
		}
		w.checkLogStart(p, low)
		start := low
		if p.trk != nil {
			start = p.trk.Watermark()
		}
		w.e.metrics.lag.WithLabelValues(w.route.Name, p.key.topic, partitionLabel(p.key.partition)).Set(float64(max(0, high-max(start, low))))
		if start < high {
			read = append(read, todo{p: p, start: start, high: high})
		}
	}
	if len(read) > 0 {
		if err := w.beginRun(ctx, r); err != nil {
			reply <- err
			return
		}
	}
	for _, t := range read {
		t.p.reading, t.p.hw, t.p.from, t.p.counts = true, t.high, t.start, counts{}
		r.parts = append(r.parts, t.p)
	}
	w.run = r
	ev := w.log.Debug() // a schedule tick that finds nothing to read is not news
	if len(r.parts) > 0 {
		ev = w.log.Info()
	}
	ev.Int64("run_id", r.id).Int("partitions", len(r.parts)).Msg("run started")
	if !w.throttleP {
		w.setPaused(r.parts, false)
	}
}

// beginRun writes r's row once r has work (records to read or due scheduled records): a
// run that finds nothing to do writes none until it ends (finishRun: FinishIdleRun).
func (w *worker) beginRun(ctx context.Context, r *runState) error {
	if r.id != 0 {
		return nil
	}
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	run, err := w.e.store.BeginRun(cctx, w.route.Name, w.e.instanceID)
	cancel()
	if err != nil {
		w.stall("store", err, "cannot begin a run; PostgreSQL does not answer")
		return fmt.Errorf("begin run: %w", err)
	}
	w.unstall()
	r.id = run.ID
	return nil
}

func (w *worker) progressRun(ctx context.Context) {
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
			if !w.throttleP {
				w.setPaused([]*partition{s.p}, false)
			}
		}
	}
	r.stalledParts = kept
	if r.phase == phaseDLQ {
		if w.held != nil || len(r.stalledParts) > 0 || w.anyReading() {
			return
		}
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
	if r.phase == phaseDrain && w.inFlight == 0 && len(w.batch) == 0 && w.storing == 0 && len(w.retries) == 0 {
		w.finishRun(ctx)
	}
}

// interruptRun stops reading (operator pause, shutdown): the run ends with what is done.
func (w *worker) interruptRun(why string) {
	r := w.run
	r.interrupted = true
	r.stalledParts = nil
	for _, p := range w.readingParts() {
		w.stopReading(p)
	}
	w.log.Info().Int64("run_id", r.id).Str("why", why).Msg("run interrupted")
}

// progressClaims redrives due scheduled rows batch by batch and reports when none is left.
func (w *worker) progressClaims(ctx context.Context) bool {
	r := w.run
	c := r.claim
	if c == nil {
		cctx, cancel := context.WithTimeout(ctx, callTimeout)
		claim, err := w.e.store.ClaimDue(cctx, w.route.Name, w.e.instanceID, claimBatch, claimLease)
		cancel()
		if err != nil {
			r.next = time.Now().Add(w.stall("store", err, "cannot claim due scheduled records; retrying"))
			return false
		}
		// PostgreSQL answers again: a run whose last work is here (no record to redrive)
		// would otherwise stay not ready until the next acknowledgement.
		w.unstall()
		if len(claim.Records) == 0 {
			return true
		}
		c = &claimState{token: claim.Token, pending: claim.Records, park: map[store.Reason][]int64{}}
		r.claim = c
	}
	if err := w.beginRun(ctx, r); err != nil { // the claim's lease holds its records meanwhile
		r.next = time.Now().Add(stallDelay(w.stallN))
		return false
	}
	for len(c.pending) > 0 && w.admit() {
		rec := c.pending[0]
		c.pending = c.pending[1:]
		w.produceClaimed(c, rec)
	}
	if len(c.pending) > 0 || c.outstanding > 0 {
		return false
	}
	if err := w.settleClaim(ctx, c); err != nil {
		r.next = time.Now().Add(w.stall("store", err, "cannot record redriven scheduled records; retrying"))
		return false
	}
	r.claim = nil
	return false
}

func (w *worker) produceClaimed(c *claimState, rec store.Record) {
	dec := headers.DecodeOf(rec.Headers)
	from := headers.Coordinates{Topic: rec.DLQ.Topic, Partition: rec.DLQ.Partition, Offset: rec.DLQ.Offset}
	topic, refused := w.route.rules.Target(rec.Origin.Topic, "")
	if refused != nil {
		c.park[refused.Reason] = append(c.park[refused.Reason], rec.ID)
		return
	}
	target, ok, err := w.topics.Partition(topic, rec.Origin.Partition, rec.Key)
	switch {
	case err != nil:
		w.stall("metadata", err, "cannot look up the original topic of a scheduled record")
		c.release = append(c.release, rec.ID)
		return
	case !ok:
		c.park[store.ReasonUnknownTopic] = append(c.park[store.ReasonUnknownTopic], rec.ID)
		return
	}
	err = delivery.Produce(&w.claimEnc, w.producer, nil, delivery.Destination{Topic: topic, Partition: target},
		delivery.Source[store.Header]{Key: rec.Key, Value: rec.Value, Timestamp: rec.Timestamp, Headers: rec.Headers},
		dec.Envelope.DeadLetteredAt(rec.Timestamp).Redriven(from, w.e.clock()), w.route.rules.Encode, &claimed{c: c, rec: rec})
	if err != nil {
		w.onClaimFailure(c, rec, err)
		return
	}
	c.outstanding++
	w.inFlight++
}

func (w *worker) onClaimAck(o *claimed, ack *kafka.Message) {
	w.inFlight--
	o.c.outstanding--
	if err := ack.TopicPartition.Error; err != nil {
		w.onClaimFailure(o.c, o.rec, err)
		return
	}
	o.c.done = append(o.c.done, store.Redriven{ID: o.rec.ID, Produced: store.Coordinates{
		Topic: *ack.TopicPartition.Topic, Partition: ack.TopicPartition.Partition, Offset: int64(ack.TopicPartition.Offset)}})
	w.redrivenCount.Inc()
}

func (w *worker) onClaimFailure(c *claimState, rec store.Record, err error) {
	switch class, reason := delivery.Classify(err); class {
	case delivery.Fatal:
		w.fatal = err
	case delivery.Permanent:
		c.park[reason] = append(c.park[reason], rec.ID)
	default:
		w.stall("produce", err, "cannot produce a scheduled record; it is released for a later run")
		c.release = append(c.release, rec.ID)
	}
}

// settleClaim records the outcome of a claim; each step is cleared once done, so a retry
// after a PostgreSQL failure does not repeat it.
func (w *worker) settleClaim(ctx context.Context, c *claimState) error {
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	if len(c.done) > 0 {
		if _, err := w.e.store.MarkRedriven(cctx, c.token, c.done); err != nil {
			return err
		}
		c.done = nil
	}
	for reason, ids := range c.park {
		n, err := w.e.store.ParkClaimed(cctx, c.token, ids, reason, "redrive of a due scheduled record: "+string(reason))
		if err != nil {
			return err
		}
		w.e.metrics.parked.WithLabelValues(w.route.Name, string(reason)).Add(float64(n))
		delete(c.park, reason)
	}
	if len(c.release) > 0 {
		if _, err := w.e.store.ReleaseClaim(cctx, c.token, c.release, w.e.clock().Add(stallCap)); err != nil {
			return err
		}
		c.release = nil
	}
	return nil
}

// finishRun commits, writes the ledger and ends the run.
func (w *worker) finishRun(ctx context.Context) {
	r := w.run
	var live []*partition
	for _, p := range r.parts {
		if !p.gone {
			live = append(live, p)
		}
	}
	if err := w.commitNow(live); err != nil {
		// librdkafka commits the stored offsets again on its next auto-commit.
		w.warnEvery("commit", err, "commit at the end of the run failed; it is retried in the background")
	}
	if !r.topicsDone { // once: the ledger and FinishRun below may be retried
		r.topicsDone = true
		if err := w.missingTopics(callTimeout); err != nil {
			r.unread = append(r.unread, err.Error())
		}
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), callTimeout)
	defer cancel()
	for _, p := range live {
		if err := w.recordLedger(cctx, r, p); err != nil {
			r.next = time.Now().Add(w.stall("store", err, "cannot write the run ledger; retrying"))
			return
		}
	}
	status, msg := store.RunSucceeded, ""
	switch {
	case r.interrupted:
		status, msg = store.RunFailed, "interrupted"
	case len(r.unread) > 0:
		status, msg = store.RunFailed, "not read to the high watermark: "+strings.Join(r.unread, "; ")
	}
	var err error
	if r.id == 0 {
		err = w.e.store.FinishIdleRun(cctx, w.route.Name, w.e.instanceID, time.Since(r.started), status, msg)
	} else if err = w.e.store.FinishRun(cctx, r.id, status, msg); errors.Is(err, store.ErrConflict) {
		err = nil
	}
	if err != nil {
		r.next = time.Now().Add(w.stall("store", err, "cannot finish the run; retrying"))
		return
	}
	w.unstall()
	elapsed := time.Since(r.started)
	w.e.metrics.runDuration.WithLabelValues(w.route.Name, string(status)).Observe(elapsed.Seconds())
	if status == store.RunSucceeded {
		w.e.metrics.lastSuccess.WithLabelValues(w.route.Name).Set(float64(w.e.clock().Unix()))
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
		w.e.metrics.lag.WithLabelValues(w.route.Name, p.key.topic, partitionLabel(p.key.partition)).Set(float64(max(0, p.hw-done)))
	}
	ev := w.log.Info()
	if r.id == 0 && status == store.RunSucceeded {
		ev = w.log.Debug()
	}
	ev.Int64("run_id", r.id).Dur("elapsed_ms", elapsed).Int64("redriven", total.redriven).
		Int64("scheduled", total.scheduled).Int64("parked", total.parked).Str("status", string(status)).Str("error", msg).Msg("run finished")
	w.run = nil
	w.fetch.release()
	switch {
	case r.interrupted:
		r.reply <- ErrRunInterrupted
	case len(r.unread) > 0:
		r.reply <- fmt.Errorf("%w: %s", ErrRunIncomplete, msg)
	default:
		r.reply <- nil
	}
}

// recordLedger writes p's range of run r, once.
func (w *worker) recordLedger(ctx context.Context, r *runState, p *partition) error {
	if p.trk == nil || p.counts.ledgerDone {
		return nil
	}
	to := p.trk.Watermark()
	c := p.counts
	e := store.LedgerEntry{RunID: r.id, Topic: p.key.topic, Partition: p.key.partition, From: p.from, To: max(to, p.from),
		Redriven: c.redriven, Scheduled: c.scheduled, Parked: c.parked, Errors: c.errors}
	e.Skipped = max(0, e.To-e.From-c.redriven-c.scheduled-c.parked)
	if err := w.e.store.RecordLedger(ctx, e); err != nil && !errors.Is(err, store.ErrConflict) {
		return err
	}
	p.counts.ledgerDone = true
	return nil
}

// rebalance runs inside Poll: assignments are paused until a run, revocations finish or
// abandon in-flight work within a bound and commit exactly what is done.
func (w *worker) rebalance(c *kafka.Consumer, ev kafka.Event) error {
	switch ev := ev.(type) {
	case kafka.AssignedPartitions:
		w.assign(ev.Partitions)
	case kafka.RevokedPartitions:
		w.revoke(ev.Partitions)
	}
	return nil
}

func (w *worker) cooperative() bool { return w.consumer.GetRebalanceProtocol() == "COOPERATIVE" }

func (w *worker) assign(tps []kafka.TopicPartition) {
	committed, err := w.consumer.Committed(tps, int(callTimeout/time.Millisecond))
	if err != nil {
		w.warnEvery("committed", err, "cannot read committed offsets; consumption starts where the group left off, unchecked against the ledger")
	}
	ledger, lerr := w.ledgerPositions()
	if lerr != nil {
		w.warnEvery("ledger", lerr, "cannot read the ledger positions; offset jumps at this assignment go unchecked")
	}
	var ps []*partition
	for i, tp := range tps {
		p := &partition{key: partKey{*tp.Topic, tp.Partition}, stored: -1, ledgered: -1}
		if err == nil && lerr == nil {
			if start, ok := w.checkAssigned(p, int64(committed[i].Offset), ledger); ok {
				p.trk, p.stored = tracker.New(start), start
				tps[i].Offset = kafka.Offset(start)
				if _, known := ledger[p.key]; !known {
					w.adopt = append(w.adopt, store.Coordinates{Topic: p.key.topic, Partition: p.key.partition, Offset: start})
					p.ledgered = start
				}
			}
		} else if err == nil && committed[i].Offset >= 0 {
			off := int64(committed[i].Offset)
			p.trk, p.stored = tracker.New(off), off
		}
		w.parts[p.key] = p
		ps = append(ps, p)
	}
	w.saveAdopted()
	w.touchedAt = time.Time{}
	if w.cooperative() {
		err = w.consumer.IncrementalAssign(tps)
	} else {
		err = w.consumer.Assign(tps)
	}
	if err != nil {
		w.log.Error().Err(err).Msg("assign failed")
	}
	w.setPaused(ps, true)
	w.log.Info().Int("partitions", len(tps)).Msg("partitions assigned (paused until a run)")
}

func (w *worker) offsetReset(p *partition, cause string) {
	w.e.metrics.offsetResets.WithLabelValues(w.route.Name, p.key.topic, partitionLabel(p.key.partition), cause).Inc()
}

// revokeGrace bounds how long a revocation waits for in-flight records.
const revokeGrace = 10 * time.Second

func (w *worker) revoke(tps []kafka.TopicPartition) {
	var ps []*partition
	for _, tp := range tps {
		if p := w.parts[partKey{*tp.Topic, tp.Partition}]; p != nil {
			p.reading = false
			ps = append(ps, p)
		}
	}
	lost := w.consumer.AssignmentLost()
	if lost && w.run != nil {
		w.lostMidRun(ps)
	}
	if !lost {
		w.drainFor(ps, time.Now().Add(revokeGrace))
		if err := w.commitNow(ps); err != nil {
			w.warnEvery("commit", err, "commit on revoke failed")
		}
		if w.run != nil {
			cctx, cancel := context.WithTimeout(context.Background(), callTimeout)
			for _, p := range ps {
				if !slices.Contains(w.run.parts, p) {
					continue // not read by this run: nothing of it is this run's to account for
				}
				if err := w.recordLedger(cctx, w.run, p); err != nil {
					w.warnEvery("ledger", err, "cannot write the ledger of a revoked partition")
				}
			}
			cancel()
		}
	}
	for _, p := range ps {
		p.gone = true
		delete(w.parts, p.key)
		if w.held != nil && *w.held.TopicPartition.Topic == p.key.topic && w.held.TopicPartition.Partition == p.key.partition {
			w.held = nil
		}
	}
	var err error
	if w.cooperative() {
		err = w.consumer.IncrementalUnassign(tps)
	} else {
		err = w.consumer.Unassign()
	}
	if err != nil {
		w.log.Error().Err(err).Msg("unassign failed")
	}
	w.log.Info().Int("partitions", len(tps)).Msg("partitions revoked")
}

// lostMidRun fails the run when the group took partitions of it away without a handover
// (the session expired: a broker outage or a stall longer than session.timeout.ms). What
// was read and not committed is read again by the next owner, what was not read waits
// for the next run: neither is a success.
func (w *worker) lostMidRun(ps []*partition) {
	r := w.run
	for _, p := range ps {
		if !slices.Contains(r.parts, p) {
			continue
		}
		r.unread = append(r.unread, fmt.Sprintf("%s/%d: revoked: assignment lost (group session expired)", p.key.topic, p.key.partition))
		w.e.metrics.lostMidRun.WithLabelValues(w.route.Name).Inc()
		w.log.Error().Int64("run_id", r.id).Str("topic", p.key.topic).Int32("partition", p.key.partition).
			Msg("partition lost mid-run: the group session expired; the run fails and its records wait for the next run")
	}
}

// drainFor processes acknowledgements and stored batches until ps have nothing open or
// the deadline passes (what is left is abandoned: not committed, read again by the next
// owner).
func (w *worker) drainFor(ps []*partition, deadline time.Time) {
	open := func() bool {
		for _, p := range ps {
			if p.trk != nil && p.trk.Open() > 0 {
				return true
			}
		}
		return false
	}
	for open() && time.Now().Before(deadline) && w.fatal == nil {
		w.flushBatch()
		w.retryProduces()
		select {
		case ev := <-w.producer.Events():
			w.onDelivery(ev)
		case f := <-w.send.failed:
			w.onProduceFailure(f.o, f.err)
		case w.sendIn() <- w.sendQ:
			w.sendQ = nil
		case b := <-w.storeOut:
			w.onStored(b)
		case <-time.After(pollInterval):
		}
	}
}

// shutdown ends the worker: stop reading, finish in-flight work within ctx, commit, close.
func (w *worker) shutdown(ctx context.Context) error {
	if w.run != nil && !w.run.interrupted {
		w.interruptRun("shutdown")
	}
	for w.fatal == nil && ctx.Err() == nil && (w.run != nil || w.inFlight > 0 || len(w.batch) > 0 || w.storing > 0) {
		w.step(ctx)
		if w.run != nil && w.run.phase == phaseDue {
			w.run.phase = phaseDrain
		}
	}
	if w.run != nil { // the grace period ran out
		w.run.reply <- errors.New("shutdown before the run finished")
		w.run = nil
	}
	var parts []*partition
	for _, p := range w.parts {
		parts = append(parts, p)
	}
	err := w.commitNow(parts)
	if err != nil {
		w.log.Warn().Err(err).Msg("final commit failed: the records after the last commit will be read again")
	}
	cerr := w.consumer.Close() // may revoke, and a revocation drains through the sender
	w.fetch.close()
	w.send.close()
	flushMs := 5000
	if dl, ok := ctx.Deadline(); ok {
		flushMs = max(0, int(time.Until(dl)/time.Millisecond))
	}
	// Flush counts events nobody reads any more as outstanding, and its own poll blocks
	// while the events channel is full: drain them (nothing is committed after this).
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		for range w.producer.Events() { // closed by Close
		}
	}()
	if left := w.producer.Flush(flushMs); left > 0 {
		w.log.Warn().Int("records", left).Msg("records still unacknowledged at shutdown: they stay uncommitted in the DLQ")
	}
	w.producer.Close()
	<-drained // ends with Close: nothing of the worker outlives its loop
	return errors.Join(cerr)
}
