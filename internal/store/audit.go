package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/dlqops/dlq/internal/store/dbsqlc"
)

// AuditEntry is one operator action: who, what, on which records (ids or a filter), how
// many rows it affected and how it ended.
type AuditEntry struct {
	ID        int64
	At        time.Time
	Actor     string
	Action    string
	RecordIDs []int64
	Filter    *Filter
	JobID     int64
	Route     string
	Affected  int64
	// Outcome is "ok", "conflict", "not_found" or "error".
	Outcome string
	// RequestID is the server's id of the request; ClientRequestID the X-Request-Id the
	// client sent, if any.
	RequestID       string
	ClientRequestID string
	// Reason is what the operator gave, e.g. for a discard.
	Reason string
	// Edit is what a replay with edits sent instead of the stored value and headers.
	Edit *Edit
}

// Audit writes one audit row on its own: the refusal of a request that the admin API
// turned down before, or in a transaction that rolled back.
func (s *AuditLog) Audit(ctx context.Context, e AuditEntry) error {
	return s.inTx(ctx, func(tx pgx.Tx) error { return writeAudit(ctx, tx, e) })
}

// refusal marks an error whose audit row the store wrote and committed.
type refusal struct{ err error }

func (r *refusal) Error() string { return r.err.Error() }
func (r *refusal) Unwrap() error { return r.err }

// IsAuditedRefusal reports whether err is a refusal the store already audited (the
// outcome not_found or conflict of a transition, a discard, a job or route action).
func IsAuditedRefusal(err error) bool {
	var r *refusal
	return errors.As(err, &r)
}

func writeAudit(ctx context.Context, tx pgx.Tx, e AuditEntry) error {
	ofRecords := e.RecordIDs // their topics are the row's, unless it has a job
	if e.JobID != 0 {
		ofRecords = nil
	}
	filter, err := marshalNullable(e.Filter)
	if err != nil {
		return err
	}
	edit, err := marshalNullable(e.Edit)
	if err != nil {
		return err
	}
	row := dbsqlc.InsertAuditParams{Edit: edit, At: e.At, Actor: e.Actor, Action: e.Action, RecordIds: storedIDs(e.RecordIDs), Filter: filter,
		Affected: e.Affected, Outcome: e.Outcome, RequestID: e.RequestID, Reason: cleanText(e.Reason),
		ClientRequestID: cleanText(e.ClientRequestID), RecordRanges: idRanges(e.RecordIDs), OfRecords: ofRecords}
	if e.JobID != 0 {
		row.JobID = &e.JobID
	}
	if e.Route != "" {
		row.Route = &e.Route
	}
	return queries.InsertAudit(ctx, tx, row)
}

// storedIDs is the audit row's record_ids: nil (NULL) when the ids ascend, one by one,
// for then they are exactly the ids of its record_ranges, from which sqlListAudit reads
// them. A job writes two rows of a thousand ids per batch, and each such array cost
// ~2.5 ms of compression and TOAST writes on a two-core machine, a twentieth of the
// batch's database work; its runs are a few bytes.
func storedIDs(ids []int64) []int64 {
	for i := 1; i < len(ids); i++ {
		if ids[i] <= ids[i-1] {
			return ids
		}
	}
	return nil
}

// idRanges is ids as the runs of consecutive ids they make up, the audit row's
// record_ranges (migration 00016), which a record's history finds through one GiST entry
// per row: a job's row of a thousand records is one range or a few, where an index of
// record_ids took an entry per record. NULL for no ids.
func idRanges(ids []int64) pgtype.Multirange[pgtype.Range[pgtype.Int8]] {
	if len(ids) == 0 {
		return nil
	}
	sorted := slices.Clone(ids)
	slices.Sort(sorted)
	sorted = slices.Compact(sorted)
	var out pgtype.Multirange[pgtype.Range[pgtype.Int8]]
	for i := 0; i < len(sorted); {
		j := i + 1
		for j < len(sorted) && sorted[j] == sorted[j-1]+1 {
			j++
		}
		out = append(out, pgtype.Range[pgtype.Int8]{
			Lower: pgtype.Int8{Int64: sorted[i], Valid: true}, Upper: pgtype.Int8{Int64: sorted[j-1] + 1, Valid: true},
			LowerType: pgtype.Inclusive, UpperType: pgtype.Exclusive, Valid: true,
		})
		i = j
	}
	return out
}

// AuditFilter selects audit entries; zero fields do not filter.
type AuditFilter struct {
	// Topics is a scoped token's topics: only the entries that concern records of those
	// topics alone.
	Topics []string
	// Topic selects the entries that concern records of this original topic.
	Topic                string
	Action, Actor, Route string
	// RecordID selects the entries that name this record (its history); JobID those of a job.
	RecordID, JobID int64
	// From and To bound at to [From, To).
	From, To time.Time
}

// where renders the filter as SQL conditions after args, as Filter.where does: values
// never become SQL text.
func (f *AuditFilter) where(args []any) (string, []any) {
	conds := []string{"true"}
	add := func(cond string, v any) {
		args = append(args, v)
		conds = append(conds, fmt.Sprintf(cond, len(args)))
	}
	if len(f.Topics) > 0 {
		add("topics <@ $%d", f.Topics)
	}
	if f.Topic != "" {
		add("topics @> ARRAY[$%d::text]", f.Topic)
	}
	if f.Action != "" {
		add("action = $%d", f.Action)
	}
	if f.Actor != "" {
		add("actor = $%d", f.Actor)
	}
	if f.Route != "" {
		add("route = $%d", f.Route)
	}
	if f.RecordID != 0 {
		add("record_ranges @> $%d::bigint", f.RecordID)
	}
	if f.JobID != 0 {
		add("job_id = $%d", f.JobID)
	}
	if !f.From.IsZero() {
		add("at >= $%d", f.From)
	}
	if !f.To.IsZero() {
		add("at < $%d", f.To)
	}
	return strings.Join(conds, " AND "), args
}

// ListAudit returns up to limit audit entries with ids below beforeID (0 for the newest),
// newest first. With topics (a scoped token's), only the entries that concern records of
// those topics alone.
func (s *AuditLog) ListAudit(ctx context.Context, beforeID int64, limit int, topics ...string) ([]AuditEntry, error) {
	return s.SearchAudit(ctx, AuditFilter{Topics: topics}, beforeID, limit)
}

// SearchAudit is ListAudit of the entries f selects.
func (s *AuditLog) SearchAudit(ctx context.Context, f AuditFilter, beforeID int64, limit int) ([]AuditEntry, error) {
	if err := checkLimit(limit); err != nil {
		return nil, err
	}
	if beforeID <= 0 {
		beforeID = 1<<63 - 1
	}
	cond, args := f.where([]any{beforeID, limit})
	rows, err := s.pool.Query(ctx, fmt.Sprintf(sqlListAudit, cond), args...)
	if err != nil {
		return nil, interpretError(err)
	}
	return collect(rows, func(row scanner) (AuditEntry, error) {
		var e AuditEntry
		var jobID *int64
		var route *string
		err := row.Scan(&e.ID, &e.At, &e.Actor, &e.Action, &e.RecordIDs, &e.Filter, &jobID, &route,
			&e.Affected, &e.Outcome, &e.RequestID, &e.Reason, &e.ClientRequestID, &e.Edit)
		e.JobID, e.Route = deref(jobID), deref(route)
		utc(&e.At)
		return e, err
	})
}

// scope is the $3 of the scoped listings: NULL for no topics (everything).
func scope(topics []string) []string {
	if len(topics) == 0 {
		return nil
	}
	return topics
}
