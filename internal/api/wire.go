package api

// The JSON shapes of api/openapi.yaml are generated into wire.gen.go; this file converts
// the store's rows into them. Optional times are pointers so that an unknown time is
// absent rather than year 1.
//
//go:generate go run github.com/oapi-codegen/oapi-codegen/v2/cmd/oapi-codegen@v2.8.2 -config oapi-codegen.yaml ../../api/openapi.yaml

import (
	"encoding/base64"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/dlqops/dlq/internal/headers"
	"github.com/dlqops/dlq/internal/masking"
	"github.com/dlqops/dlq/internal/store"
)

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

// toDetail is a record's representation with its payload, masked by m (nil: in clear).
// Every answer that carries a payload is built here, so none leaves unmasked by mistake.
func toDetail(rec *store.Record, m *masking.Masker) RecordDetail {
	view := masked(m, rec, nil)
	r := &view
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
		ConsumerGroup: e.Group,
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
		Fingerprint: f.Fingerprint, StoredFrom: optTime(f.StoredFrom), StoredTo: optTime(f.StoredTo),
	}
	contentToWire(f, out)
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
		TargetTopic: j.TargetTopic, RedriveTo: ReplayRedriveTo(j.RedriveTo), ResetRetry: j.ResetRetry, RatePerSecond: j.RatePerSecond,
		ConfirmedCount: j.ConfirmedCount, Total: j.Total, Done: j.Done, Failed: j.Failed, Skipped: j.Skipped, Error: j.Error,
		InFlightAtCancel: j.InFlightAtCancel,
		CreatedBy:        j.CreatedBy, CreatedAt: j.CreatedAt, StartedAt: optTime(j.StartedAt), UpdatedAt: j.UpdatedAt,
		FinishedAt: optTime(j.FinishedAt),
	}
}

func toRouteControl(rc *store.RouteControl) RouteControl {
	out := RouteControl{Route: rc.Route, Paused: rc.Paused, RunRequestedAt: optTime(rc.RunRequestedAt),
		UpdatedBy: rc.UpdatedBy, UpdatedAt: rc.UpdatedAt, NextRunAt: optTime(rc.NextRunAt), Schedule: rc.Schedule, LastRunEndedAt: optTime(rc.LastRunEndedAt),
		BreakerOverride: rc.BreakerOverride, BreakerOverrideReason: rc.BreakerOverrideReason}
	if b := rc.Breaker; b.State != "" {
		out.Breaker = &BreakerState{State: BreakerStateState(b.State), Since: b.Since, ReturnedRatio: b.ReturnedRatio, ReportedBy: b.ReportedBy}
	}
	return out
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

// toAudit is an audit entry with its edit masked by m.
func toAudit(e *store.AuditEntry, m *masking.Masker) AuditEntry {
	return AuditEntry{ID: e.ID, At: e.At, Actor: e.Actor, Action: e.Action, RecordIDs: e.RecordIDs,
		Filter: toFilter(e.Filter), JobID: e.JobID, Route: e.Route, Affected: e.Affected, Outcome: e.Outcome,
		RequestID: e.RequestID, ClientRequestID: e.ClientRequestID, Reason: e.Reason, Edit: toAuditEdit(e.Edit, m)}
}
