package store

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"strings"
	"time"
)

// Filter selects records; zero fields do not filter. It is also what bulk jobs store, hence
// the JSON tags.
type Filter struct {
	Statuses      []Status `json:"statuses,omitempty"`
	DLQTopic      string   `json:"dlq_topic,omitempty"`
	OriginalTopic string   `json:"original_topic,omitempty"`
	// OriginalTopics matches any of these original topics: the scope of an API token.
	OriginalTopics []string `json:"original_topics,omitempty"`
	Reasons        []Reason `json:"reasons,omitempty"`
	ErrorClass     string   `json:"error_class,omitempty"`
	Route          string   `json:"route,omitempty"`
	// Key matches the exact key bytes; nil does not filter.
	Key []byte `json:"key,omitempty"`
	// StoredFrom and StoredTo bound stored_at to [StoredFrom, StoredTo).
	StoredFrom time.Time `json:"stored_from,omitzero"`
	StoredTo   time.Time `json:"stored_to,omitzero"`
	// ErrorContains matches error messages containing it, ignoring case. It is checked row
	// by row on what the other filters and the id order select.
	ErrorContains string `json:"error_contains,omitempty"`
	// Fingerprint selects the records of one incident (fingerprint.Of).
	Fingerprint string `json:"fingerprint,omitempty"`
	// Masked selects by the keyed hash of a masked field; listings only.
	Masked *MaskedMatch `json:"-"`
	// ValueContains and KeyContains match records whose value or key holds these bytes,
	// case-sensitively and byte for byte, so a binary payload is searched like a text one.
	// Like ErrorContains they are checked row by row (search.go).
	ValueContains []byte `json:"value_contains,omitempty"`
	KeyContains   []byte `json:"key_contains,omitempty"`
	// Header matches records with a header of this exact name; HeaderValueContains, with
	// it, those whose value of that header holds these bytes.
	Header              string `json:"header,omitempty"`
	HeaderValueContains []byte `json:"header_value_contains,omitempty"`
}

// where renders the filter as SQL conditions joined by AND, with its values appended to
// args as numbered parameters: filter values never become SQL text.
func (f *Filter) where(args []any) (string, []any) { return f.render(args, leased) }

// whereInPage is where for a page of a job's records (FROM jobPage), read while the job's
// leases pile up: whether a record is leased is read from the lease merged with its row,
// never from a scan of the whole table (a hashed subplan) per page.
func (f *Filter) whereInPage(args []any) (string, []any) { return f.render(args, leasedInPage) }

// render is where with isLeased as the test of a record's lease.
func (f *Filter) render(args []any, isLeased string) (string, []any) {
	var conds []string
	add := func(cond string, v any) {
		args = append(args, v)
		conds = append(conds, fmt.Sprintf(cond, len(args)))
	}
	// A record a replay holds is replaying whatever its row's status (parked or scheduled),
	// and replayed once its lease holds the outcome, until that is folded into its row.
	switch {
	case len(f.Statuses) == 0:
	case len(f.Statuses) > 1:
		add("("+derivedStatus+") = ANY($%d)", statusStrings(f.Statuses))
	case f.Statuses[0] == StatusReplaying:
		conds = append(conds, "id IN (SELECT record_id FROM replay_states WHERE replayed_at IS NULL)")
	case f.Statuses[0] == StatusReplayed:
		add("(status = $%d OR id IN (SELECT record_id FROM replay_states WHERE replayed_at IS NOT NULL))", string(f.Statuses[0]))
	case f.Statuses[0] == StatusParked || f.Statuses[0] == StatusScheduled:
		// Equality, not ANY, lets the (…, status, id) indexes return rows in id order.
		add("status = $%d AND NOT "+isLeased, string(f.Statuses[0]))
	default:
		add("status = $%d", string(f.Statuses[0]))
	}
	if f.DLQTopic != "" {
		add("dlq_topic = $%d", f.DLQTopic)
	}
	if f.OriginalTopic != "" {
		add("original_topic = $%d", f.OriginalTopic)
	}
	if len(f.OriginalTopics) > 0 {
		add("original_topic = ANY($%d)", f.OriginalTopics)
	}
	if len(f.Reasons) > 0 {
		reasons := make([]string, len(f.Reasons))
		for i, r := range f.Reasons {
			reasons[i] = string(r)
		}
		add("reason = ANY($%d)", reasons)
	}
	if f.ErrorClass != "" {
		add("error_class = $%d", f.ErrorClass)
	}
	if f.Route != "" {
		add("route = $%d", f.Route)
	}
	if f.Key != nil {
		add("key = $%d", f.Key)
	}
	if !f.StoredFrom.IsZero() {
		add("stored_at >= $%d", f.StoredFrom)
	}
	if !f.StoredTo.IsZero() {
		add("stored_at < $%d", f.StoredTo)
	}
	if f.Fingerprint != "" {
		add("fingerprint = $%d", f.Fingerprint)
	}
	if f.ErrorContains != "" {
		// strpos, not LIKE: % and _ in the value are plain characters.
		add("strpos(lower(error_message), lower($%d)) > 0", cleanText(f.ErrorContains))
	}
	if f.Masked != nil {
		var cond string
		cond, args = f.Masked.where(args)
		conds = append(conds, cond)
	}
	conds, args = f.renderContent(conds, args)
	if len(conds) == 0 {
		return "true", args
	}
	return strings.Join(conds, " AND "), args
}

func statusStrings(statuses []Status) []string {
	out := make([]string, len(statuses))
	for i, s := range statuses {
		out[i] = string(s)
	}
	return out
}

// Page is one page of records, newest first.
type Page struct {
	Records []Record
	// NextCursor fetches the following page; empty on the last page.
	NextCursor string
}

// MaxPageSize bounds every listing's limit.
const MaxPageSize = 1000

// List returns up to limit records matching f, newest (highest id) first, starting after
// cursor ("" for the first page), without their key, value and headers (KeySize and
// ValueSize say how large they are; Get reads one whole): what a page costs does not grow
// with the records' payloads. Pagination is by keyset on id, so a deep page costs what
// the first does, and rows inserted meanwhile (which get higher ids) never shift the pages.
func (s *Records) List(ctx context.Context, f Filter, cursor string, limit int) (Page, error) {
	if err := checkLimit(limit); err != nil {
		return Page{}, err
	}
	before, err := decodeCursor(cursor)
	if err != nil {
		return Page{}, err
	}
	cond, args := f.where([]any{before, limit + 1})
	rows, err := s.pool.Query(ctx, fmt.Sprintf(sqlListRecords, cond), args...)
	if err != nil {
		return Page{}, interpretError(err)
	}
	recs, err := collect(rows, scanRecord)
	if err != nil {
		return Page{}, err
	}
	var page Page
	if len(recs) > limit {
		recs = recs[:limit]
		page.NextCursor = encodeCursor(recs[limit-1].ID)
	}
	page.Records = recs
	return page, nil
}

// ListAfter returns up to limit records matching f with ids above afterID, lowest id first:
// how a bulk job walks its selection and resumes from its cursor after a crash.
func (s *Records) ListAfter(ctx context.Context, f Filter, afterID int64, limit int) ([]Record, error) {
	if err := checkLimit(limit); err != nil {
		return nil, err
	}
	cond, args := f.where([]any{afterID, limit})
	rows, err := s.pool.Query(ctx, fmt.Sprintf(sqlListRecordsAfter, cond), args...)
	if err != nil {
		return nil, interpretError(err)
	}
	return collect(rows, scanRecord)
}

// Count returns how many records match f: the dry run of a bulk job.
func (s *Records) Count(ctx context.Context, f Filter) (int64, error) {
	cond, args := f.where(nil)
	var n int64
	err := s.pool.QueryRow(ctx, fmt.Sprintf(sqlCountRecords, cond), args...).Scan(&n)
	return n, interpretError(err)
}

// CountIDs returns how many of ids name records that f selects: the dry run of a bulk
// job by ids counts the records that exist and that the job would act on, not the ids.
func (s *Records) CountIDs(ctx context.Context, ids []int64, f Filter) (int64, error) {
	cond, args := f.where(nil)
	args = append(args, ids)
	var n int64
	err := s.pool.QueryRow(ctx, fmt.Sprintf(sqlCountRecords, fmt.Sprintf("(%s) AND id = ANY($%d)", cond, len(args))), args...).Scan(&n)
	return n, interpretError(err)
}

func checkLimit(limit int) error {
	if limit <= 0 || limit > MaxPageSize {
		return &ValidationError{Field: "limit", Reason: fmt.Sprintf("must be 1..%d", MaxPageSize)}
	}
	return nil
}

// The cursor is the last id of a page, versioned so that its format can change.
const cursorVersion = 1

func encodeCursor(id int64) string {
	var b [9]byte
	b[0] = cursorVersion
	binary.BigEndian.PutUint64(b[1:], uint64(id))
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// decodeCursor returns the id to list below; the first page lists below the largest id.
func decodeCursor(c string) (int64, error) {
	if c == "" {
		return 1<<63 - 1, nil
	}
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil || len(b) != 9 || b[0] != cursorVersion || int64(binary.BigEndian.Uint64(b[1:])) <= 0 {
		return 0, &ValidationError{Field: "cursor", Reason: "not a cursor this server issued"}
	}
	return int64(binary.BigEndian.Uint64(b[1:])), nil
}
