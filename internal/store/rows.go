package store

import (
	"encoding/json"
	"time"

	"github.com/dlqops/dlq/internal/store/dbsqlc"
)

// queries are the generated fixed statements (queries/, sqlc.yaml); each takes the pool or
// the transaction to run on.
var queries = dbsqlc.New()

// recordFromRow reads a whole record. Every generated statement that returns one (GetRecord,
// ClaimDue, Discard, RetryNow) returns the same columns, so their rows convert to
// GetRecordRow. Its key and value are read, so their sizes are their lengths.
func recordFromRow(row dbsqlc.GetRecordRow) Record {
	r := Record{ID: row.ID, StoredAt: row.StoredAt, ChangedAt: row.ChangedAt, ChangedBy: row.ChangedBy}
	r.DLQ = Coordinates{Topic: row.DlqTopic, Partition: row.DlqPartition, Offset: row.DlqOffset}
	r.Origin = Origin{Topic: deref(row.OriginalTopic), Partition: -1, Offset: -1, Timestamp: deref(row.OriginalTimestamp)}
	if row.OriginalPartition != nil {
		r.Origin.Partition = *row.OriginalPartition
	}
	if row.OriginalOffset != nil {
		r.Origin.Offset = *row.OriginalOffset
	}
	r.Timestamp, r.Key, r.Value = row.RecordTimestamp, row.Key, row.Value
	if len(row.HeaderKeys) > 0 {
		r.Headers = make([]Header, len(row.HeaderKeys))
		for i := range row.HeaderKeys {
			r.Headers[i] = Header{Key: string(row.HeaderKeys[i]), Value: row.HeaderValues[i]}
		}
	}
	r.RetryCount, r.ErrorClass, r.ErrorMessage = int(row.RetryCount), row.ErrorClass, row.ErrorMessage
	r.Reason, r.Status, r.Route, r.DueAt = Reason(row.Reason), Status(row.Status), row.Route, deref(row.DueAt)
	// A lease's holder is read through a CASE, which sqlc leaves untyped: NULL or the
	// column's own type.
	r.LeaseOwner, _ = row.LeaseOwner.(string)
	r.LeaseUntil, _ = row.LeaseUntil.(time.Time)
	r.ReplayID, r.JobID = deref(row.ReplayID), deref(row.JobID)
	if row.TargetTopic != nil && row.ProducedPartition != nil && row.ProducedOffset != nil {
		r.Produced = &Coordinates{Topic: *row.TargetTopic, Partition: *row.ProducedPartition, Offset: *row.ProducedOffset}
	}
	r.KeySize, r.ValueSize = lengthOf(r.Key), lengthOf(r.Value)
	utc(&r.Timestamp, &r.Origin.Timestamp, &r.DueAt, &r.LeaseUntil, &r.StoredAt, &r.ChangedAt)
	return r
}

// lengthOf is a key's or value's size, -1 for NULL.
func lengthOf(b []byte) int {
	if b == nil {
		return -1
	}
	return len(b)
}

// jobFromRow reads a job. Every generated statement that returns one returns the same
// columns, so their rows convert to GetJobRow.
func jobFromRow(row dbsqlc.GetJobRow) (Job, error) {
	j := Job{ID: row.ID, Status: JobStatus(row.Status), Error: row.Error, Topics: row.Topics,
		InFlightAtCancel: row.InFlightAtCancel, CreatedBy: row.CreatedBy, RequestID: row.RequestID,
		CreatedAt: row.CreatedAt, StartedAt: deref(row.StartedAt), UpdatedAt: row.UpdatedAt, FinishedAt: deref(row.FinishedAt),
		LeaseOwner: deref(row.LeaseOwner), LeaseUntil: deref(row.LeaseUntil)}
	j.JobSpec = JobSpec{Kind: JobKind(row.Kind), RecordIDs: row.RecordIds, TargetTopic: row.TargetTopic,
		RedriveTo: row.RedriveTo, ResetRetry: row.ResetRetry, RatePerSecond: int(row.RatePerSecond), ConfirmedCount: row.ConfirmedCount}
	j.JobProgress = JobProgress{Total: row.Total, Done: row.Done, Failed: row.Failed, Skipped: row.Skipped, Cursor: row.CursorID}
	if err := unmarshalNullable(row.Filter, &j.Filter); err != nil {
		return Job{}, err
	}
	if err := unmarshalNullable(row.Edit, &j.Edit); err != nil {
		return Job{}, err
	}
	utc(&j.LeaseUntil, &j.CreatedAt, &j.StartedAt, &j.UpdatedAt, &j.FinishedAt)
	return j, nil
}

// unmarshalNullable decodes a jsonb column into *dst, leaving it nil for NULL.
func unmarshalNullable[T any](raw json.RawMessage, dst **T) error {
	if raw == nil {
		return nil
	}
	*dst = new(T)
	return json.Unmarshal(raw, *dst)
}

// marshalNullable encodes v for a jsonb column, NULL for nil.
func marshalNullable[T any](v *T) (json.RawMessage, error) {
	if v == nil {
		return nil, nil
	}
	return json.Marshal(v)
}

// routeControlFromRow reads a route control; its statements' rows convert to
// RouteControlsRow.
func routeControlFromRow(row dbsqlc.RouteControlsRow) RouteControl {
	rc := RouteControl{Route: row.Route, Paused: row.Paused, RunRequestedAt: deref(row.RunRequestedAt),
		UpdatedBy: row.UpdatedBy, UpdatedAt: row.UpdatedAt, NextRunAt: deref(row.NextRunAt), Schedule: deref(row.Schedule),
		BreakerOverride: BreakerOverride(deref(row.BreakerOverride)), BreakerOverrideReason: deref(row.BreakerOverrideReason),
		Breaker: BreakerReport{State: deref(row.BreakerState), Since: deref(row.BreakerSince),
			ReturnedRatio: deref(row.BreakerReturnedRatio), ReportedBy: deref(row.BreakerReportedBy)}}
	utc(&rc.RunRequestedAt, &rc.UpdatedAt, &rc.NextRunAt, &rc.Breaker.Since)
	return rc
}
