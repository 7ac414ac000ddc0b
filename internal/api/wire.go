package api

import (
	"encoding/base64"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/dlqops/dlq/internal/headers"
	"github.com/dlqops/dlq/internal/store"
)

// The JSON shapes of api/openapi.yaml. Optional times are pointers so that an unknown
// time is absent rather than year 1.

// Coordinates locate a record in Kafka.
type Coordinates struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
}

// Origin is where a record was first produced; unknown parts are absent.
type Origin struct {
	Topic     string     `json:"topic,omitempty"`
	Partition *int32     `json:"partition,omitempty"`
	Offset    *int64     `json:"offset,omitempty"`
	Timestamp *time.Time `json:"timestamp,omitempty"`
}

// Record is a stored record without its payload.
type Record struct {
	ID           int64        `json:"id"`
	Status       store.Status `json:"status"`
	Reason       store.Reason `json:"reason"`
	Route        string       `json:"route"`
	DLQ          Coordinates  `json:"dlq"`
	Original     Origin       `json:"original"`
	Timestamp    time.Time    `json:"timestamp"`
	RetryCount   int          `json:"retry_count"`
	ErrorClass   string       `json:"error_class"`
	ErrorMessage string       `json:"error_message"`
	DueAt        *time.Time   `json:"due_at,omitempty"`
	StoredAt     time.Time    `json:"stored_at"`
	ChangedAt    time.Time    `json:"changed_at"`
	ChangedBy    string       `json:"changed_by"`
	Produced     *Coordinates `json:"produced,omitempty"`
	ReplayID     string       `json:"replay_id,omitempty"`
	JobID        int64        `json:"job_id,omitempty"`
	KeySize      *int         `json:"key_size"`
	ValueSize    *int         `json:"value_size"`
}

// Bytes is a key, value or header value: base64, plus the text when it is valid UTF-8.
type Bytes struct {
	Null   bool    `json:"null"`
	Base64 string  `json:"base64"`
	UTF8   *string `json:"utf8,omitempty"`
}

// Header is one stored header.
type Header struct {
	Key   string `json:"key"`
	Value Bytes  `json:"value"`
}

// Envelope is our reading of a record's headers.
type Envelope struct {
	RetryCount        int          `json:"retry_count"`
	OriginalTopic     string       `json:"original_topic,omitempty"`
	OriginalPartition *int32       `json:"original_partition,omitempty"`
	OriginalOffset    *int64       `json:"original_offset,omitempty"`
	OriginalTimestamp *time.Time   `json:"original_timestamp,omitempty"`
	FirstFailure      *time.Time   `json:"first_failure,omitempty"`
	LastFailure       *time.Time   `json:"last_failure,omitempty"`
	ErrorClass        string       `json:"error_class,omitempty"`
	ErrorMessage      string       `json:"error_message,omitempty"`
	RedriveID         *Coordinates `json:"redrive_id,omitempty"`
	Replay            *Replay      `json:"replay,omitempty"`
	Convention        string       `json:"convention"`
	Problem           *Reasoned    `json:"problem,omitempty"`
	Warnings          []string     `json:"warnings"`
}

// Replay is the replay metadata of a record's headers.
type Replay struct {
	Actor    string `json:"actor,omitempty"`
	JobID    string `json:"job_id,omitempty"`
	ReplayID string `json:"replay_id,omitempty"`
}

// Reasoned is why the headers make a record unroutable.
type Reasoned struct {
	Reason string `json:"reason"`
	Detail string `json:"detail"`
}

// RecordDetail is one record with its payload and headers.
type RecordDetail struct {
	Record   Record   `json:"record"`
	Key      Bytes    `json:"key"`
	Value    Bytes    `json:"value"`
	Headers  []Header `json:"headers"`
	Envelope Envelope `json:"envelope"`
}

// RecordPage is one page of a listing.
type RecordPage struct {
	Records    []Record `json:"records"`
	NextCursor string   `json:"next_cursor,omitempty"`
}

// Filter selects records.
type Filter struct {
	Statuses       []store.Status `json:"statuses,omitempty"`
	Reasons        []store.Reason `json:"reasons,omitempty"`
	DLQTopic       string         `json:"dlq_topic,omitempty"`
	OriginalTopic  string         `json:"original_topic,omitempty"`
	OriginalTopics []string       `json:"original_topics,omitempty"`
	ErrorClass     string         `json:"error_class,omitempty"`
	ErrorContains  string         `json:"error_contains,omitempty"`
	Route          string         `json:"route,omitempty"`
	// Key is the key as UTF-8 text; KeyB64 its bytes in standard base64, for a key that
	// is not text. At most one of them.
	Key        *string    `json:"key,omitempty"`
	KeyB64     *string    `json:"key_b64,omitempty"`
	StoredFrom *time.Time `json:"stored_from,omitempty"`
	StoredTo   *time.Time `json:"stored_to,omitempty"`
}

// ReplayRequest is the body of a single replay. Value and Headers, when given, replace
// what is sent (an operator's fix); the stored record keeps what was dead-lettered.
type ReplayRequest struct {
	TargetTopic string    `json:"target_topic,omitempty"`
	ResetRetry  bool      `json:"reset_retry,omitempty"`
	Value       *Bytes    `json:"value,omitempty"`
	Headers     *[]Header `json:"headers,omitempty"`
}

// DiscardRequest is the body of a single discard.
type DiscardRequest struct {
	Reason string `json:"reason"`
}

// BulkRequest is the body of a bulk replay or discard; TargetTopic, ResetRetry and
// RatePerSecond are for replays, Reason for discards.
type BulkRequest struct {
	IDs           []int64 `json:"ids,omitempty"`
	Filter        *Filter `json:"filter,omitempty"`
	DryRun        bool    `json:"dry_run,omitempty"`
	ConfirmCount  *int64  `json:"confirm_count,omitempty"`
	TargetTopic   string  `json:"target_topic,omitempty"`
	ResetRetry    bool    `json:"reset_retry,omitempty"`
	RatePerSecond int     `json:"rate_per_second,omitempty"`
	Reason        string  `json:"reason,omitempty"`
}

// DryRun is the answer to a bulk dry run.
type DryRun struct {
	Count int64 `json:"count"`
	// NoPayload is how many of the selected records have no payload (a replay refuses
	// them): share groups' dead letters whose source was gone, key and value null.
	NoPayload int64 `json:"no_payload"`
}

// Job is a durable operator job.
type Job struct {
	ID             int64           `json:"id"`
	Kind           store.JobKind   `json:"kind"`
	Status         store.JobStatus `json:"status"`
	IDs            []int64         `json:"ids,omitempty"`
	Filter         *Filter         `json:"filter,omitempty"`
	TargetTopic    string          `json:"target_topic,omitempty"`
	ResetRetry     bool            `json:"reset_retry"`
	RatePerSecond  int             `json:"rate_per_second"`
	ConfirmedCount int64           `json:"confirmed_count"`
	Total          int64           `json:"total"`
	Done           int64           `json:"done"`
	Failed         int64           `json:"failed"`
	Skipped        int64           `json:"skipped"`
	// InFlightAtCancel is how many records a replay job had handed to the producer and not
	// settled when its cancel was noticed; each that reached the target is in Done. Absent
	// until they settled, and for a job not cancelled while it ran.
	InFlightAtCancel *int64     `json:"in_flight_at_cancel,omitempty"`
	Error            string     `json:"error,omitempty"`
	CreatedBy        string     `json:"created_by"`
	CreatedAt        time.Time  `json:"created_at"`
	StartedAt        *time.Time `json:"started_at,omitempty"`
	UpdatedAt        time.Time  `json:"updated_at"`
	FinishedAt       *time.Time `json:"finished_at,omitempty"`
}

// JobList is a page of jobs.
type JobList struct {
	Jobs       []Job `json:"jobs"`
	NextBefore int64 `json:"next_before,omitempty"`
}

// StatCount is the count of one (DLQ topic, original topic, reason, status).
type StatCount struct {
	DLQTopic      string       `json:"dlq_topic"`
	OriginalTopic string       `json:"original_topic"`
	Reason        store.Reason `json:"reason"`
	Status        store.Status `json:"status"`
	Count         int64        `json:"count"`
}

// Stats are the record counts.
type Stats struct {
	Counts       []StatCount `json:"counts"`
	OldestParked *time.Time  `json:"oldest_parked,omitempty"`
}

// ParkedOverTime is what entered the parking store per hour or day, oldest first.
type ParkedOverTime struct {
	Bucket string        `json:"bucket"`
	Points []ParkedPoint `json:"points"`
}

// ParkedPoint is one hour or day: the records stored in it (parked or scheduled, by
// stored_at) and how many of them are parked now.
type ParkedPoint struct {
	Start       time.Time `json:"start"`
	Stored      int64     `json:"stored"`
	StillParked int64     `json:"still_parked"`
}

// RouteControl is a route's operator controls.
type RouteControl struct {
	Route          string     `json:"route"`
	Paused         bool       `json:"paused"`
	RunRequestedAt *time.Time `json:"run_requested_at,omitempty"`
	UpdatedBy      string     `json:"updated_by"`
	UpdatedAt      time.Time  `json:"updated_at"`
	NextRunAt      *time.Time `json:"next_run_at,omitempty"`
}

// RouteList lists route controls.
type RouteList struct {
	Routes []RouteControl `json:"routes"`
}

// LedgerEntry accounts for a DLQ offset range of a run.
type LedgerEntry struct {
	DLQTopic   string    `json:"dlq_topic"`
	Partition  int32     `json:"partition"`
	FromOffset int64     `json:"from_offset"`
	ToOffset   int64     `json:"to_offset"`
	Redriven   int64     `json:"redriven"`
	Scheduled  int64     `json:"scheduled"`
	Parked     int64     `json:"parked"`
	Skipped    int64     `json:"skipped"`
	Errors     int64     `json:"errors"`
	RecordedAt time.Time `json:"recorded_at"`
}

// Run is one redrive run.
type Run struct {
	ID         int64           `json:"id"`
	Route      string          `json:"route"`
	WorkerID   string          `json:"worker_id"`
	Status     store.RunStatus `json:"status"`
	Error      string          `json:"error,omitempty"`
	StartedAt  time.Time       `json:"started_at"`
	FinishedAt *time.Time      `json:"finished_at,omitempty"`
	Ledger     []LedgerEntry   `json:"ledger"`
}

// RunList lists runs.
type RunList struct {
	Runs []Run `json:"runs"`
}

// AuditEntry is one operator action.
type AuditEntry struct {
	ID        int64     `json:"id"`
	At        time.Time `json:"at"`
	Actor     string    `json:"actor"`
	Action    string    `json:"action"`
	RecordIDs []int64   `json:"record_ids,omitempty"`
	Filter    *Filter   `json:"filter,omitempty"`
	JobID     int64     `json:"job_id,omitempty"`
	Route     string    `json:"route,omitempty"`
	Affected  int64     `json:"affected"`
	Outcome   string    `json:"outcome"`
	RequestID string    `json:"request_id,omitempty"`
	// ClientRequestID is the X-Request-Id the client sent, beside the server's RequestID.
	ClientRequestID string `json:"client_request_id,omitempty"`
	Reason          string `json:"reason,omitempty"`
}

// AuditList is a page of the audit log.
type AuditList struct {
	Entries    []AuditEntry `json:"entries"`
	NextBefore int64        `json:"next_before,omitempty"`
}

func optTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

func size(n int) *int {
	if n < 0 {
		return nil
	}
	return &n
}

func toBytes(b []byte) Bytes {
	out := Bytes{Null: b == nil, Base64: base64.StdEncoding.EncodeToString(b)}
	if b != nil && utf8.Valid(b) {
		s := string(b)
		out.UTF8 = &s
	}
	return out
}

func toCoordinates(c *store.Coordinates) *Coordinates {
	if c == nil {
		return nil
	}
	return &Coordinates{Topic: c.Topic, Partition: c.Partition, Offset: c.Offset}
}

func toRecord(r *store.Record) Record {
	out := Record{
		ID: r.ID, Status: r.Status, Reason: r.Reason, Route: r.Route,
		DLQ:       Coordinates{Topic: r.DLQ.Topic, Partition: r.DLQ.Partition, Offset: r.DLQ.Offset},
		Original:  Origin{Topic: r.Origin.Topic, Timestamp: optTime(r.Origin.Timestamp)},
		Timestamp: r.Timestamp, RetryCount: r.RetryCount, ErrorClass: r.ErrorClass, ErrorMessage: r.ErrorMessage,
		DueAt: optTime(r.DueAt), StoredAt: r.StoredAt, ChangedAt: r.ChangedAt, ChangedBy: r.ChangedBy,
		Produced: toCoordinates(r.Produced), ReplayID: r.ReplayID, JobID: r.JobID,
		KeySize: size(r.KeySize), ValueSize: size(r.ValueSize),
	}
	if r.Origin.Partition >= 0 {
		out.Original.Partition = &r.Origin.Partition
	}
	if r.Origin.Offset >= 0 {
		out.Original.Offset = &r.Origin.Offset
	}
	return out
}

func toDetail(r *store.Record) RecordDetail {
	hs := make([]headers.Header, len(r.Headers))
	out := RecordDetail{Record: toRecord(r), Key: toBytes(r.Key), Value: toBytes(r.Value), Headers: make([]Header, len(r.Headers))}
	for i, h := range r.Headers {
		hs[i] = headers.Header(h)
		out.Headers[i] = Header{Key: h.Key, Value: toBytes(h.Value)}
	}
	d := headers.Decode(hs)
	e := d.Envelope.DeadLetteredAt(r.Timestamp) // unknown failure times: when it was dead-lettered
	out.Envelope = Envelope{
		RetryCount: e.RetryCount, OriginalTopic: e.OriginalTopic,
		OriginalTimestamp: optTime(e.OriginalTimestamp), FirstFailure: optTime(e.FirstFailure), LastFailure: optTime(e.LastFailure),
		ErrorClass: e.ErrorClass, ErrorMessage: e.ErrorMessage, Convention: e.Convention, Warnings: make([]string, len(d.Warnings)),
	}
	for i, w := range d.Warnings {
		out.Envelope.Warnings[i] = w.Detail
	}
	if e.OriginalPartition >= 0 {
		out.Envelope.OriginalPartition = &e.OriginalPartition
	}
	if e.OriginalOffset >= 0 {
		out.Envelope.OriginalOffset = &e.OriginalOffset
	}
	if c := e.RedriveID; c != nil {
		out.Envelope.RedriveID = &Coordinates{Topic: c.Topic, Partition: c.Partition, Offset: c.Offset}
	}
	if rp := e.Replay; rp != nil {
		out.Envelope.Replay = &Replay{Actor: rp.Actor, JobID: rp.JobID, ReplayID: rp.ReplayID}
	}
	if p := d.Problem; p != nil {
		out.Envelope.Problem = &Reasoned{Reason: p.Reason, Detail: p.Detail}
	}
	return out
}

func toFilter(f *store.Filter) *Filter {
	if f == nil {
		return nil
	}
	out := &Filter{
		Statuses: f.Statuses, Reasons: f.Reasons, DLQTopic: f.DLQTopic, OriginalTopic: f.OriginalTopic,
		OriginalTopics: f.OriginalTopics, ErrorClass: f.ErrorClass, ErrorContains: f.ErrorContains, Route: f.Route,
		StoredFrom: optTime(f.StoredFrom), StoredTo: optTime(f.StoredTo),
	}
	// The key as the caller could give it back: text when it is, base64 otherwise.
	switch k := string(f.Key); {
	case f.Key == nil:
	case utf8.ValidString(k) && !strings.ContainsRune(k, 0):
		out.Key = &k
	default:
		b := base64.StdEncoding.EncodeToString(f.Key)
		out.KeyB64 = &b
	}
	return out
}

func toJob(j *store.Job) Job {
	return Job{
		ID: j.ID, Kind: j.Kind, Status: j.Status, IDs: j.RecordIDs, Filter: toFilter(j.Filter),
		TargetTopic: j.TargetTopic, ResetRetry: j.ResetRetry, RatePerSecond: j.RatePerSecond,
		ConfirmedCount: j.ConfirmedCount, Total: j.Total, Done: j.Done, Failed: j.Failed, Skipped: j.Skipped, Error: j.Error,
		InFlightAtCancel: j.InFlightAtCancel,
		CreatedBy:        j.CreatedBy, CreatedAt: j.CreatedAt, StartedAt: optTime(j.StartedAt), UpdatedAt: j.UpdatedAt,
		FinishedAt: optTime(j.FinishedAt),
	}
}

func toRouteControl(rc *store.RouteControl) RouteControl {
	return RouteControl{Route: rc.Route, Paused: rc.Paused, RunRequestedAt: optTime(rc.RunRequestedAt),
		UpdatedBy: rc.UpdatedBy, UpdatedAt: rc.UpdatedAt, NextRunAt: optTime(rc.NextRunAt)}
}

func toRun(r *store.Run) Run {
	out := Run{ID: r.ID, Route: r.Route, WorkerID: r.WorkerID, Status: r.Status, Error: r.Error,
		StartedAt: r.StartedAt, FinishedAt: optTime(r.FinishedAt), Ledger: make([]LedgerEntry, len(r.Ledger))}
	for i, e := range r.Ledger {
		out.Ledger[i] = LedgerEntry{DLQTopic: e.Topic, Partition: e.Partition, FromOffset: e.From, ToOffset: e.To,
			Redriven: e.Redriven, Scheduled: e.Scheduled, Parked: e.Parked, Skipped: e.Skipped, Errors: e.Errors,
			RecordedAt: e.RecordedAt}
	}
	return out
}

func toAudit(e *store.AuditEntry) AuditEntry {
	return AuditEntry{ID: e.ID, At: e.At, Actor: e.Actor, Action: e.Action, RecordIDs: e.RecordIDs,
		Filter: toFilter(e.Filter), JobID: e.JobID, Route: e.Route, Affected: e.Affected, Outcome: e.Outcome,
		RequestID: e.RequestID, ClientRequestID: e.ClientRequestID, Reason: e.Reason}
}
