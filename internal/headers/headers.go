// Package headers is the DLQ record header contract: it decodes the retry
// envelope from our canonical dlq-* headers and from the conventions other
// systems already write (Kafka share groups and Kafka Streams, the plain
// originalTopic/retryCount style, x-retry-count, Spring Kafka, Kafka Connect, Karafka), and
// it writes our canonical headers on redrive or replay without disturbing any other header.
//
// Decoding rules (docs/headers.md describes them for users):
//   - Precedence is fixed: dlq, share-group, streams, plain, x-retry-count,
//     spring, spring-original, connect, karafka. Each field takes the first convention that has it,
//     except routing: topic, partition, offset and timestamp all come from the
//     first convention that names a topic, so coordinates are never mixed.
//   - The newest failure wins: a foreign error header written after ours (a
//     system that failed the record again after our redrive) supplies the error
//     class and message, and our last-failure time is dropped. Failure times the
//     headers do not give are the DLQ record's timestamp (DeadLetteredAt).
//   - Keys match exactly (Kafka header keys are case-sensitive). A key that
//     occurs more than once: the last occurrence wins, with a warning.
//   - An empty (or null) text value or retry count counts as absent.
//   - Our own values are ASCII: decimal integers, RFC 3339 UTC timestamps with
//     milliseconds, a redrive id "topic/partition/offset".
//   - Spring numeric headers are big-endian binary (4 bytes int, 8 bytes long);
//     decimal text is accepted as well. A value of exactly 4 (or 8) bytes is
//     binary unless every byte is an ASCII digit: such binary values would
//     exceed 808464432 (an int) or 3.4e18 (a long), which no partition,
//     attempt count, offset or millisecond timestamp reaches.
//   - A share group's delivery count is information only: it counts deliveries
//     to one group, not our redrives, and never becomes the retry count.
//   - An original topic whose bytes are not UTF-8 text (invalid UTF-8, a NUL) is
//     kept in its Go-quoted form ("orders\xff"), every byte recoverable, never
//     replaced: such a topic is illegal.
//   - A missing or illegal original topic makes the record unroutable; a
//     malformed, negative or overflowing retry count makes it
//     invalid_retry_count (unroutable wins when both apply). Any other
//     malformed field is left unknown and reported in Decoded.Warnings.
package headers

import (
	"time"
)

// Header has the shape of confluent-kafka-go's kafka.Header, so callers
// convert with a type conversion. A nil Value (null header) and an empty one
// are distinct and both survive Encode.
type Header struct {
	Key   string
	Value []byte
}

// Canonical header keys: everything we produce writes these.
const (
	KeyRetryCount        = "dlq-retry-count"
	KeyOriginalTopic     = "dlq-original-topic"
	KeyOriginalPartition = "dlq-original-partition"
	KeyOriginalOffset    = "dlq-original-offset"
	KeyOriginalTimestamp = "dlq-original-timestamp"
	KeyFirstFailure      = "dlq-first-failure"
	KeyLastFailure       = "dlq-last-failure"
	KeyErrorClass        = "dlq-error-class"
	KeyErrorMessage      = "dlq-error-message"
	KeyRedriveID         = "dlq-redrive-id"
	KeyReplayActor       = "dlq-replay-actor"
	KeyReplayJob         = "dlq-replay-job"
	KeyReplayID          = "dlq-replay-id"
	// KeyErrorPermanent, "true", says the writer knows no redrive can cure the failure
	// (deadletter.Permanent): the worker parks the record as not_retryable on every route.
	KeyErrorPermanent = "dlq-error-permanent"
	// KeyConsumerGroup is the consumer group that failed the record (the deadletter
	// library writes it); every hop keeps it, so a redrive can go to that group alone.
	KeyConsumerGroup = "dlq-consumer-group"
	// KeyTargetGroup addresses a redriven record on its source topic to one consumer
	// group (route redrive_to group_header): the other groups skip it.
	KeyTargetGroup = "dlq-target-group"
)

// KeyShareTopic is the original topic a share group's dead letter points at
// (Kafka 4.4, KIP-1191). By default such a record carries headers only: the
// worker fetches the record it points at from the source topic.
const KeyShareTopic = "__dlq.errors.topic"

// Envelope.Convention of our own headers and of a share group's dead letter.
const (
	ConventionOurs       = "dlq"
	ConventionShareGroup = "share-group"
)

// Reasons a record cannot be redriven; the parking store uses these strings.
const (
	ReasonUnroutable        = "unroutable"
	ReasonInvalidRetryCount = "invalid_retry_count"
)

// MaxTextBytes bounds every decoded or encoded text field (error messages
// above all), so that records do not grow on every hop.
const MaxTextBytes = 1024

// TimeLayout is how our timestamps are written: RFC 3339, milliseconds, UTC.
const TimeLayout = "2006-01-02T15:04:05.000Z"

// Coordinates locate a record in Kafka.
type Coordinates struct {
	Topic     string
	Partition int32
	Offset    int64
}

// Replay says who replayed a parked record and through which job.
type Replay struct {
	Actor    string
	JobID    string
	ReplayID string
}

// Envelope is the retry metadata of a DLQ record.
type Envelope struct {
	RetryCount        int       // 0 when absent
	OriginalTopic     string    // "" when absent
	OriginalPartition int32     // -1 when unknown
	OriginalOffset    int64     // -1 when unknown
	OriginalTimestamp time.Time // zero when unknown
	FirstFailure      time.Time // zero when unknown
	LastFailure       time.Time // zero when unknown
	ErrorClass        string
	ErrorMessage      string
	RedriveID         *Coordinates // DLQ position the record was last read from; nil when absent
	Replay            *Replay      // nil when the record was never replayed
	// ErrorCause is the class of the error's cause where the convention gives one apart
	// (Spring's exception-cause-fqcn), "" otherwise. It is read only, never written.
	ErrorCause string
	// Permanent: the failure's writer marked it permanent (KeyErrorPermanent). It belongs
	// to one failure: a redrive or a replay clears it.
	Permanent bool
	// NotBefore is Spring's retry_topic-backoff-timestamp (zero when absent):
	// the worker redrives no earlier. It is not written: our own due time is the
	// redrive policy's.
	NotBefore time.Time
	// DeliveryCount is a share group's __dlq.errors.delivery.count (0 when
	// absent): how often the broker delivered the record to that group, 1 for a
	// record the consumer rejected, the group's limit for one that ran out. It
	// is read only and never the retry count: a redriven record starts a new
	// count, our retry count travels in dlq-retry-count.
	DeliveryCount int
	// ShareGroup is the share group that dead-lettered the record ("" when none).
	ShareGroup string
	// Group is the consumer group that failed the record, "" when unknown: ours
	// (dlq-consumer-group), a share group's, Spring's kafka_dlt-original-consumer-group,
	// or connect-<name> for a Kafka Connect connector. It is written on every hop.
	Group string
	// TargetGroup is the one consumer group a redriven record is for ("" for every
	// group). It belongs to one hop: a redrive or a replay clears it, and the route or
	// the operator sets it again.
	TargetGroup string
	// Convention names who supplied the routing: "dlq", "share-group",
	// "streams", "plain", "spring", "spring-original", "connect" or "karafka";
	// "" when nobody did.
	Convention string
}

// Redriven returns the envelope for the next hop of a record read from the
// DLQ at from: one more retry, redrive id from. Coordinates and failure times
// stay those of the failures the dead letter records (the first hop's
// coordinates, the time of its last failure), for every convention; a failure
// time the dead letter does not give is now. A hop carries exactly one
// de-duplication id, so an earlier replay's id is not written.
func (e Envelope) Redriven(from Coordinates, now time.Time) Envelope {
	if e.RetryCount < maxRetryCount {
		e.RetryCount++
	}
	if e.LastFailure.IsZero() {
		e.LastFailure = toMillis(now)
	}
	if e.FirstFailure.IsZero() {
		e.FirstFailure = e.LastFailure
	}
	e.RedriveID = &from
	e.Replay = nil
	e.Permanent = false
	e.TargetGroup = ""
	return e
}

// Replayed returns the envelope of an operator's replay r: the replay id is the
// hop's de-duplication id, so the redrive id of an earlier hop is not written
// (a consumer de-duplicating on it would drop the replay).
func (e Envelope) Replayed(r Replay) Envelope {
	e.Replay = &r
	e.RedriveID = nil
	e.Permanent = false
	e.TargetGroup = ""
	return e
}

// DeadLetteredAt fills the failure times the headers leave unknown with t, the DLQ
// record's own timestamp: Spring and Kafka Connect leave the timestamp of the records they
// dead-letter to their producer's clock, so it is the time of the failure that put the
// record there. The first failure is then the first dead-lettering, not our first redrive.
// A zero or pre-1970 t (no timestamp) changes nothing.
func (e Envelope) DeadLetteredAt(t time.Time) Envelope {
	if t.UnixMilli() <= 0 {
		return e
	}
	t = toMillis(t)
	if e.FirstFailure.IsZero() {
		e.FirstFailure = t
	}
	if e.LastFailure.IsZero() {
		e.LastFailure = t
	}
	return e
}

// toMillis is t.UTC().Truncate(time.Millisecond), what we write of a time, without
// Truncate's general division.
func toMillis(t time.Time) time.Time {
	return t.UTC().Add(-time.Duration(t.Nanosecond() % int(time.Millisecond)))
}

// Problem is why a record cannot be redriven. It is an error so callers can
// wrap it; Reason is one of the Reason* constants.
type Problem struct {
	Reason string
	Detail string
}

func (p *Problem) Error() string { return p.Reason + ": " + p.Detail }

// Decoded is the result of Decode.
type Decoded struct {
	Envelope Envelope
	Problem  *Problem  // nil when the record can be redriven
	Warnings []Warning // malformed optional fields and duplicate keys, for logging
	Raw      []Header  // the input, untouched (same backing array)
}

// WarningKind says what a decoder warning is about. The set is closed, so a kind is
// safe as a metric label (the header values are not).
type WarningKind string

// Warning kinds.
const (
	WarnDuplicateKey WarningKind = "duplicate_key" // a key we read occurs more than once
	WarnRetryCount   WarningKind = "retry_count"   // an invalid retry count on a record unroutable anyway
	WarnPartition    WarningKind = "partition"
	WarnOffset       WarningKind = "offset"
	WarnTimestamp    WarningKind = "timestamp" // original timestamp, failure times, not-before
	WarnRedriveID    WarningKind = "redrive_id"
	WarnOther        WarningKind = "other"
)

// Warning is a malformed optional field, left unknown, or a duplicated key.
type Warning struct {
	Kind WarningKind
	// Detail is "key: what is wrong: value", the value quoted and cut to 64 bytes. It
	// holds text from the record: log it as a field value, never as a format or a label.
	Detail string
}

func (w Warning) String() string { return w.Detail }

// ValidTopicName reports whether s is a legal Kafka topic name.
func ValidTopicName(s string) bool {
	if len(s) == 0 || len(s) > 249 || s == "." || s == ".." {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}
