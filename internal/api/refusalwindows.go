package api

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/dlqops/dlq/internal/store"
)

// refusalAuditWindow is how long repeated refusals of one caller are folded into one
// audit row: a caller who keeps being refused adds at most two rows per window (the first
// refusal, then the count of the rest), however fast it sends.
const refusalAuditWindow = 10 * time.Second

// maxRefusalWindows bounds the callers whose refusals are being folded at once. Callers
// are token names or, for console sign-ins, addresses; beyond the bound a refusal is only
// counted (dlq_admin_unaudited_refusals_total), so that many addresses cannot grow memory.
const maxRefusalWindows = 10000

// refusalWindows folds repeated refusals into audit rows. The first refusal of a key in
// a window is written at once, with its request ids; the others of that window are
// counted and written as one row when the window ends (or at Close), with the count in
// affected.
type refusalWindows struct {
	clock func() time.Time
	write func(store.AuditEntry)

	mu   sync.Mutex
	open map[string]*refusalWindow
}

type refusalWindow struct {
	first store.AuditEntry
	start time.Time
	last  time.Time
	more  int64
	timer *time.Timer
}

func newRefusalWindows(clock func() time.Time, write func(store.AuditEntry)) *refusalWindows {
	return &refusalWindows{clock: clock, write: write, open: map[string]*refusalWindow{}}
}

// add audits refusal e of key, at once or folded; it reports false when e was neither
// written nor folded (too many keys at once, or mayOpen, when not nil, refused a new
// window).
func (rw *refusalWindows) add(key string, e store.AuditEntry, mayOpen func() bool) bool {
	now := rw.clock()
	rw.mu.Lock()
	w := rw.open[key]
	if w != nil && now.Sub(w.start) < refusalAuditWindow {
		w.more++
		w.last = now
		rw.mu.Unlock()
		return true
	}
	var ended *refusalWindow
	if w != nil {
		ended = rw.endLocked(key, w)
	} else if len(rw.open) >= maxRefusalWindows || (mayOpen != nil && !mayOpen()) {
		rw.mu.Unlock()
		return false
	}
	w = &refusalWindow{first: e, start: now, last: now}
	rw.open[key] = w
	w.timer = time.AfterFunc(refusalAuditWindow, func() {
		rw.mu.Lock()
		var ended *refusalWindow
		if rw.open[key] == w {
			ended = rw.endLocked(key, w)
		}
		rw.mu.Unlock()
		rw.writeSummary(ended)
	})
	rw.mu.Unlock()
	rw.writeSummary(ended)
	rw.write(e)
	return true
}

// endLocked closes w, the window of key.
func (rw *refusalWindows) endLocked(key string, w *refusalWindow) *refusalWindow {
	w.timer.Stop()
	delete(rw.open, key)
	return w
}

// writeSummary writes the row of the refusals w folded, if any.
func (rw *refusalWindows) writeSummary(w *refusalWindow) {
	if w == nil || w.more == 0 {
		return
	}
	e := w.first
	e.At = w.last.UTC()
	e.Affected = w.more
	e.RequestID, e.ClientRequestID = "", ""
	e.Reason = fmt.Sprintf("%d more refusals like the first, %s to %s: %s", w.more,
		w.start.UTC().Format(time.RFC3339), w.last.UTC().Format(time.RFC3339), w.first.Reason)
	rw.write(e)
}

// close writes the rows of every open window.
func (rw *refusalWindows) close() {
	rw.mu.Lock()
	var ended []*refusalWindow
	for key, w := range rw.open {
		ended = append(ended, rw.endLocked(key, w))
	}
	rw.mu.Unlock()
	for _, w := range ended {
		rw.writeSummary(w)
	}
}

// writeAudit writes a refusal's audit row on its own context: the rows outlive the
// requests they describe.
func (s *refusalAudit) writeAudit(e store.AuditEntry) {
	ctx, cancel := context.WithTimeout(context.Background(), auditTimeout)
	defer cancel()
	if err := s.store.Audit(ctx, e); err != nil {
		s.log.Error().Err(err).Str("request_id", e.RequestID).Str("action", e.Action).
			Msg("cannot write the audit row of a refused request")
	}
}

// Close writes the audit rows of the refusals still being folded; call it once the
// server no longer serves.
func (s *refusalAudit) Close() { s.refusals.close() }

// AuditSignIn audits a refused console sign-in from addr (outcome unauthorized or
// rate_limited), folded per address and outcome as the API's refusals are; the first
// rows of addresses are bounded as those of requests without a valid token are.
func (s *refusalAudit) AuditSignIn(addr, outcome, detail string) {
	e := store.AuditEntry{At: s.clock().UTC(), Actor: "anonymous", Action: "POST /ui/login", Outcome: outcome,
		RequestID: requestID(), Reason: "console sign-in from " + addr + ": " + detail}
	mayOpen := func() bool { return s.anonAudit.AllowN(s.clock(), 1) }
	if !s.refusals.add("sign-in\x00"+outcome+"\x00"+addr, e, mayOpen) {
		s.unaudited.Inc()
	}
}
