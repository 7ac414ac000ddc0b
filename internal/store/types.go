package store

import "time"

// Status is where a dead-letter record is in its life.
type Status string

const (
	// StatusScheduled: waiting in PostgreSQL until due_at, then redriven by a worker.
	StatusScheduled Status = "scheduled"
	// StatusRedriven: a scheduled record was produced to its original topic.
	StatusRedriven Status = "redriven"
	// StatusParked: waiting on a human.
	StatusParked Status = "parked"
	// StatusReplaying: a job worker holds a lease on it and is producing it.
	StatusReplaying Status = "replaying"
	// StatusReplayed: an operator replay produced it.
	StatusReplayed Status = "replayed"
	// StatusDiscarded: an operator dropped it.
	StatusDiscarded Status = "discarded"
)

// Statuses lists every Status.
var Statuses = []Status{StatusScheduled, StatusRedriven, StatusParked, StatusReplaying, StatusReplayed, StatusDiscarded}

// Reason says why a record was scheduled or parked.
type Reason string

const (
	ReasonBackoff           Reason = "backoff" // scheduled: not yet due
	ReasonExhausted         Reason = "exhausted"
	ReasonUnroutable        Reason = "unroutable"
	ReasonInvalidRetryCount Reason = "invalid_retry_count"
	ReasonTooLarge          Reason = "too_large"
	ReasonUnknownTopic      Reason = "unknown_topic"
	ReasonUnauthorized      Reason = "unauthorized"
	// ReasonSourceUnavailable: a share group's dead letter whose source record is gone,
	// or whose coordinates name another record since.
	ReasonSourceUnavailable Reason = "source_unavailable"
	// ReasonTargetNotAllowed: the record's target is outside its route's allowed_targets.
	ReasonTargetNotAllowed Reason = "target_not_allowed"
	ReasonManual           Reason = "manual"
	// ReasonNotRetryable: the record's error class matches its route's not_retryable, or
	// its writer marked the failure permanent; it is parked when first read.
	ReasonNotRetryable Reason = "not_retryable"
	// ReasonUnknownGroup: the route (or the replay) sends records to their failing consumer
	// group alone, and no header of this one names its group.
	ReasonUnknownGroup Reason = "unknown_group"
)

// Reasons lists every Reason.
var Reasons = []Reason{ReasonBackoff, ReasonExhausted, ReasonUnroutable, ReasonInvalidRetryCount, ReasonTooLarge,
	ReasonUnknownTopic, ReasonUnauthorized, ReasonSourceUnavailable, ReasonTargetNotAllowed, ReasonManual,
	ReasonNotRetryable, ReasonUnknownGroup}

// Coordinates name one record in a topic.
type Coordinates struct {
	Topic     string
	Partition int32
	Offset    int64
}

// Header is one Kafka record header. Key may hold any bytes; a nil Value is a null header
// value and differs from an empty one.
type Header struct {
	Key   string
	Value []byte
}

// Origin is where a dead-letter record was first produced, as far as its headers say.
// Unknown parts are "" for the topic, -1 for partition and offset, zero for the time.
type Origin struct {
	Topic     string
	Partition int32
	Offset    int64
	Timestamp time.Time
}

// NewRecord is a DLQ record to schedule or park.
type NewRecord struct {
	DLQ    Coordinates
	Origin Origin
	// Key and Value: nil is NULL, distinct from empty.
	Key, Value   []byte
	Headers      []Header
	Timestamp    time.Time
	RetryCount   int
	ErrorClass   string
	ErrorMessage string
	Reason       Reason
	// Status is StatusScheduled (DueAt required) or StatusParked.
	Status Status
	DueAt  time.Time
	Route  string
}

// Record is a stored dead-letter record.
type Record struct {
	ID int64
	NewRecord
	StoredAt  time.Time
	ChangedAt time.Time
	ChangedBy string
	// LeaseOwner and LeaseUntil are set while a worker holds the row.
	LeaseOwner string
	LeaseUntil time.Time
	// Produced is where the record was finally written (redriven or replayed), else nil.
	Produced *Coordinates
	ReplayID string
	JobID    int64
	// KeySize and ValueSize are the key's and value's lengths in bytes, -1 for NULL. They are
	// set when a listing leaves Key, Value and Headers out.
	KeySize, ValueSize int
}

// Actor is who asks for an operator action, for the audit log.
type Actor struct {
	Name string
	// RequestID is the server's id of the request; ClientRequestID the client's own
	// X-Request-Id, kept beside it in the audit log.
	RequestID       string
	ClientRequestID string
}
