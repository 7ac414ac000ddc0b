package jobs

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/dlqops/dlq/internal/delivery"
	"github.com/dlqops/dlq/internal/delivery/rules"
	"github.com/dlqops/dlq/internal/headers"
	"github.com/dlqops/dlq/internal/store"
)

func allOf(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// produce hands the records of b.sent at indexes to p with produce and enc. A failure is
// kept in its result for settle; after a failed metadata lookup the rest are not tried
// (each would wait for the lookup's timeout) and fail with it, to be retried.
func (b *batch) produce(p *kafka.Producer, enc *delivery.Encoder, produce producer, indexes []int) {
	var lookup error
	for _, i := range indexes {
		b.results[i].err = lookup
		if lookup != nil {
			continue
		}
		err := produce(p, enc, &b.sent[i], b.reports, i)
		if err == nil {
			b.inFlight++
			continue
		}
		b.results[i].err = err
		if errors.Is(err, errLookup) {
			lookup = err
		}
	}
}

// producer is execution.produce.
type producer func(p *kafka.Producer, enc *delivery.Encoder, rec *store.Record, reports chan kafka.Event, i int) error

// errUnknownRoute: the record's route is not in this worker's configuration, so nothing
// says where it may go.
var errUnknownRoute = errors.New("the record's route is not configured on this worker")

// errLookup: a metadata lookup got no answer.
var errLookup = errors.New("metadata lookup")

// classify says whether a failed replay of a record may succeed if produced again (the
// one classifier of package delivery: the broker is down, a lookup timed out), and else
// the reason it is parked with: the precise one for a refusal or a permanent produce
// error, "" (the one it had) for a record of an unknown route or a fatal producer error.
func classify(err error) (retriable bool, reason store.Reason) {
	var refused *rules.Refusal
	switch {
	case errors.As(err, &refused):
		return false, refused.Reason
	case errors.Is(err, errUnknownRoute):
		return false, ""
	}
	switch class, reason := delivery.Classify(err); class {
	case delivery.Transient:
		return true, ""
	case delivery.Permanent:
		return false, reason
	}
	return false, ""
}

// produce sends the replay of rec through the delivery path: to its original topic, or
// the job's target, or where the job's redrive_to sends it by the group that failed it
// (that group's topic, or addressed to it), if its route allows it and it exists; key, value, timestamp and
// every foreign header exactly as stored; our headers rewritten with the replay metadata
// (and the retry count reset if the job asks). A *rules.Refusal says why it may not go.
func (x *execution) produce(p *kafka.Producer, enc *delivery.Encoder, rec *store.Record, reports chan kafka.Event, i int) error {
	rr := x.rules[rec.Route]
	if rr == nil {
		return fmt.Errorf("route %q: %w", rec.Route, errUnknownRoute)
	}
	env := headers.DecodeOf(rec.Headers).Envelope
	to, refused := rr.Replay(rec.Origin.Topic, x.job.TargetTopic, env.Group, x.job.RedriveTo)
	if refused != nil {
		return refused
	}
	topic := to.Topic
	original := int32(-1)
	if topic == rec.Origin.Topic {
		original = rec.Origin.Partition
	}
	partition, ok, err := x.topics.Partition(topic, original, rec.Key)
	switch {
	case err != nil:
		return fmt.Errorf("%w of %s: %w", errLookup, topic, err)
	case !ok:
		return &rules.Refusal{Reason: store.ReasonUnknownTopic, Detail: "topic " + topic + " does not exist"}
	}
	if x.job.ResetRetry {
		env.RetryCount = 0
	}
	env = env.Replayed(headers.Replay{Actor: x.job.CreatedBy, JobID: strconv.FormatInt(x.job.ID, 10), ReplayID: rec.ReplayID})
	env.TargetGroup = to.Group
	src := delivery.Source[store.Header]{Key: rec.Key, Value: rec.Value, Timestamp: rec.Timestamp, Headers: rec.Headers}
	if e := x.job.Edit; e != nil {
		src = edited(src, e)
	}
	return delivery.Produce(enc, p, reports, delivery.Destination{Topic: topic, Partition: partition},
		src, env, rr.Encode, i)
}

// edited is what an operator's edit sends instead of the stored record: the edited value
// and foreign headers; the envelope still comes from the stored headers.
func edited(src delivery.Source[store.Header], e *store.Edit) delivery.Source[store.Header] {
	if e.ValueSet {
		src.Value = e.Value
	}
	if e.HeadersSet {
		src.Headers = make([]store.Header, len(e.Headers))
		for i, h := range e.Headers {
			src.Headers[i] = store.Header(h)
		}
	}
	return src
}
