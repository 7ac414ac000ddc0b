package redrive

import (
	"hash/fnv"
	"strconv"
	"time"

	"github.com/dlqops/dlq/internal/headers"
	"github.com/dlqops/dlq/internal/store"
)

// ReasonTargetNotAllowed parks a record whose original topic is outside the route's
// allow-list.
const ReasonTargetNotAllowed store.Reason = "target_not_allowed"

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
	due    time.Time // for actSchedule
}

// classify decides what to do with a decoded DLQ record read at from, at now. The
// topic's existence is checked later, against the cluster.
func (r *route) classify(d headers.Decoded, from headers.Coordinates, recordTime, now time.Time) decision {
	if d.Problem != nil {
		return decision{act: actPark, reason: store.Reason(d.Problem.Reason), detail: d.Problem.Detail}
	}
	e := d.Envelope
	if e.RetryCount >= r.maxRetries {
		return decision{act: actPark, reason: store.ReasonExhausted,
			detail: "retry count " + strconv.Itoa(e.RetryCount) + " reached max_retries " + strconv.Itoa(r.maxRetries)}
	}
	if !r.allows(e.OriginalTopic) {
		return decision{act: actPark, reason: ReasonTargetNotAllowed, detail: e.OriginalTopic + " is not in allowed_targets"}
	}
	last := e.LastFailure
	if last.IsZero() {
		last = recordTime // the record was written when it failed
	}
	due := r.policy.Due(last, e.RetryCount, jitterDraw(from))
	if due.After(now) {
		return decision{act: actSchedule, reason: store.ReasonBackoff, due: due}
	}
	return decision{act: actRedrive}
}

// jitterDraw is a uniform draw in [0, 1) fixed by the record's DLQ position, so that a
// record read twice (after a crash) gets the same due time.
func jitterDraw(c headers.Coordinates) float64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(c.Topic))
	_, _ = h.Write([]byte{byte(c.Partition >> 24), byte(c.Partition >> 16), byte(c.Partition >> 8), byte(c.Partition)})
	_, _ = h.Write([]byte(strconv.FormatInt(c.Offset, 10)))
	return float64(h.Sum64()>>11) / (1 << 53)
}
