package redrive

import (
	"strconv"
	"time"

	"github.com/dlqops/dlq/internal/delivery/rules"
	"github.com/dlqops/dlq/internal/headers"
	"github.com/dlqops/dlq/internal/store"
)

// maxNotBefore bounds how far ahead a writer's not-before hint may schedule a record.
const maxNotBefore = 24 * time.Hour

// action is what happens to a DLQ record.
type action uint8

const (
	actRedrive  action = iota // produce to the original topic now
	actSchedule               // not due yet: store as scheduled
	actPark                   // needs a human
)

type decision struct {
	act    action
	reason store.Reason // for actSchedule and actPark
	detail string
	due    time.Time     // for actSchedule
	to     rules.Address // for actRedrive: the topic and the group it is addressed to
}

// classify decides what to do with a decoded DLQ record read at from, at now. The
// topic's existence is checked later, against the cluster.
func (r *route) classify(d headers.Decoded, from headers.Coordinates, recordTime, now time.Time) decision {
	if d.Problem != nil {
		return decision{act: actPark, reason: store.Reason(d.Problem.Reason), detail: d.Problem.Detail}
	}
	e := d.Envelope
	// Before exhaustion: a failure no redrive cures is what an operator must see, however
	// often it was retried.
	if e.Permanent {
		return decision{act: actPark, reason: store.ReasonNotRetryable, detail: "the writer marked the failure permanent (" + headers.KeyErrorPermanent + ")"}
	}
	if r.notRetryable.Matches(e.ErrorClass) || r.notRetryable.Matches(e.ErrorCause) {
		return decision{act: actPark, reason: store.ReasonNotRetryable, detail: "error class matches the route's not_retryable"}
	}
	if e.RetryCount >= r.maxRetries {
		return decision{act: actPark, reason: store.ReasonExhausted,
			detail: "retry count " + strconv.Itoa(e.RetryCount) + " reached max_retries " + strconv.Itoa(r.maxRetries)}
	}
	to, refused := r.rules.Redrive(e.OriginalTopic, e.Group)
	if refused != nil {
		return decision{act: actPark, reason: refused.Reason, detail: refused.Detail}
	}
	last := e.LastFailure
	if last.IsZero() {
		last = recordTime // the record was written when it failed
	}
	due := r.policy.Due(last, e.RetryCount, jitterDraw(from))
	// Spring's retry_topic-backoff-timestamp is its writer's not-before: honoured, but
	// bounded, so that a garbled far-future hint cannot hold a record for ever. The bound
	// is the hint's: a hint only delays, never brings forward what the backoff says.
	hint := e.NotBefore
	if limit := now.Add(maxNotBefore); hint.After(limit) {
		hint = limit
	}
	if hint.After(due) {
		due = hint
	}
	if due.After(now) {
		return decision{act: actSchedule, reason: store.ReasonBackoff, due: due}
	}
	return decision{act: actRedrive, to: to}
}

// jitterDraw is a uniform draw in [0, 1) fixed by the record's DLQ position, so that a
// record read twice (after a crash) gets the same due time.
func jitterDraw(c headers.Coordinates) float64 {
	// FNV-1a (64 bits) of the topic, the big-endian partition and the decimal offset,
	// inlined so that a draw does not allocate.
	const offset64, prime64 = 14695981039346656037, 1099511628211
	h := uint64(offset64)
	for i := 0; i < len(c.Topic); i++ {
		h = (h ^ uint64(c.Topic[i])) * prime64
	}
	for _, b := range [4]byte{byte(c.Partition >> 24), byte(c.Partition >> 16), byte(c.Partition >> 8), byte(c.Partition)} {
		h = (h ^ uint64(b)) * prime64
	}
	var buf [20]byte
	for _, b := range strconv.AppendInt(buf[:0], c.Offset, 10) {
		h = (h ^ uint64(b)) * prime64
	}
	return float64(h>>11) / (1 << 53)
}
