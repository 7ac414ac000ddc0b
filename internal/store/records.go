package store

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"github.com/dlqops/dlq/internal/fingerprint"
	"github.com/dlqops/dlq/internal/store/dbsqlc"
	"github.com/jackc/pgx/v5/pgconn"
)

// BatchResult reports what StoreBatch did with each record.
type BatchResult struct {
	// Inserted[i] is true when records[i] was stored now, false when its DLQ coordinates
	// were already stored (the stored row is left as it was).
	Inserted []bool
	// New counts the true entries of Inserted.
	New int
}

// StoreBatch stores scheduled or parked records idempotently on their DLQ coordinates, and
// records ledger, if not nil, in the same transaction: when it returns nil everything is
// durable and the DLQ offsets may be committed.
func (s *Records) StoreBatch(ctx context.Context, records []NewRecord, ledger *LedgerEntry) (BatchResult, error) {
	for i := range records {
		if err := validateNewRecord(&records[i]); err != nil {
			return BatchResult{}, err
		}
	}
	// Concurrent writers of overlapping batches insert in the same order, so they wait on
	// each other instead of deadlocking.
	sorted := slices.Clone(records)
	slices.SortFunc(sorted, func(a, b NewRecord) int { return compareCoordinates(a.DLQ, b.DLQ) })
	now := s.now()
	var inserted map[Coordinates]bool
	var err error
	if ledger == nil {
		// One COPY is a transaction of its own: no BEGIN and COMMIT round trips.
		inserted, err = copyRecords(ctx, s.pool, sorted, now)
		err = interpretError(err)
	} else {
		inserted, err = s.storeBatch(ctx, sorted, ledger, now, copyRecords)
	}
	if errors.Is(err, errStoredBefore) {
		s.log.Debug().Int("records", len(records)).Msg("batch holds stored coordinates, inserting only new ones")
		inserted, err = s.storeBatch(ctx, sorted, ledger, now, insertNewRecords)
	}
	if err != nil {
		return BatchResult{}, err
	}
	res := BatchResult{Inserted: make([]bool, len(records))}
	for i := range records {
		// A coordinate repeated within the batch is inserted once, for its first occurrence.
		if inserted[records[i].DLQ] {
			res.Inserted[i] = true
			res.New++
			delete(inserted, records[i].DLQ)
		}
	}
	return res, nil
}

// errStoredBefore: a batch holds coordinates that are already stored.
var errStoredBefore = errors.New("batch holds stored coordinates")

// An insertFunc stores records and returns the coordinates it inserted.
type insertFunc func(ctx context.Context, db querier, records []NewRecord, now time.Time) (map[Coordinates]bool, error)

// querier is a pool or a transaction.
type querier interface {
	CopyFrom(ctx context.Context, table pgx.Identifier, columns []string, src pgx.CopyFromSource) (int64, error)
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// storeBatch stores records with insert, and the ledger entry, in one transaction.
func (s *Records) storeBatch(ctx context.Context, records []NewRecord, ledger *LedgerEntry, now time.Time, insert insertFunc) (map[Coordinates]bool, error) {
	var inserted map[Coordinates]bool
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		var err error
		if inserted, err = insert(ctx, tx, records, now); err != nil {
			return err
		}
		if ledger != nil {
			return insertLedger(ctx, tx, ledger, now)
		}
		return nil
	})
	return inserted, err
}

// copyRecords is the common case, a batch read for the first time: one COPY straight into
// the table. If a coordinate is already stored it fails with errStoredBefore, and the
// batch goes again through insertNewRecords.
func copyRecords(ctx context.Context, db querier, records []NewRecord, now time.Time) (map[Coordinates]bool, error) {
	inserted := make(map[Coordinates]bool, len(records))
	if len(records) == 0 {
		return inserted, nil
	}
	_, err := db.CopyFrom(ctx, pgx.Identifier{"dead_letters"}, insertColumns, copySource(records, now))
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "23505" { // unique_violation
		return nil, errStoredBefore
	}
	if err != nil {
		return nil, fmt.Errorf("copy batch: %w", err)
	}
	for _, r := range records {
		inserted[r.DLQ] = true
	}
	return inserted, nil
}

// insertNewRecords COPYs the batch into a per-connection temporary table and moves it with
// INSERT ... ON CONFLICT DO NOTHING, which reports what was new. db must be a transaction:
// the stage empties at every commit.
func insertNewRecords(ctx context.Context, tx querier, records []NewRecord, now time.Time) (map[Coordinates]bool, error) {
	if _, err := tx.Exec(ctx, sqlCreateStage); err != nil {
		return nil, fmt.Errorf("create stage: %w", err)
	}
	if _, err := tx.CopyFrom(ctx, pgx.Identifier{"dead_letters_stage"}, insertColumns, copySource(records, now)); err != nil {
		return nil, fmt.Errorf("copy batch to stage: %w", err)
	}
	rows, err := tx.Query(ctx, sqlInsertFromStage)
	if err != nil {
		return nil, fmt.Errorf("insert batch: %w", err)
	}
	inserted := make(map[Coordinates]bool, len(records))
	var c Coordinates
	if _, err := pgx.ForEachRow(rows, []any{&c.Topic, &c.Partition, &c.Offset}, func() error {
		inserted[c] = true
		return nil
	}); err != nil {
		return nil, fmt.Errorf("insert batch: %w", err)
	}
	return inserted, nil
}

func compareCoordinates(a, b Coordinates) int {
	return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition), cmp.Compare(a.Offset, b.Offset))
}

func copySource(records []NewRecord, now time.Time) pgx.CopyFromSource {
	return pgx.CopyFromSlice(len(records), func(i int) ([]any, error) { return insertRow(&records[i], now), nil })
}

func validateNewRecord(r *NewRecord) error {
	switch {
	case r.Status != StatusScheduled && r.Status != StatusParked:
		return &ValidationError{Field: "status", Reason: fmt.Sprintf("records are stored as scheduled or parked, not %q", r.Status)}
	case r.Status == StatusScheduled && r.DueAt.IsZero():
		return &ValidationError{Field: "due_at", Reason: "a scheduled record needs a due time"}
	case r.Reason == "":
		return &ValidationError{Field: "reason", Reason: "empty"}
	case r.DLQ.Topic == "":
		return &ValidationError{Field: "dlq_topic", Reason: "empty"}
	}
	return nil
}

// insertRow orders a new record's values as insertColumns.
func insertRow(r *NewRecord, now time.Time) []any {
	class, message, topic := cleanText(r.ErrorClass), cleanText(r.ErrorMessage), cleanText(r.Origin.Topic)
	template := fingerprint.Template(message)
	keys := make([][]byte, len(r.Headers))
	values := make([][]byte, len(r.Headers))
	for i, h := range r.Headers {
		keys[i] = []byte(h.Key)
		values[i] = h.Value
	}
	return []any{
		r.DLQ.Topic, r.DLQ.Partition, r.DLQ.Offset,
		nullIfEmpty(topic), nullIfNegative(r.Origin.Partition), nullIfNegative(r.Origin.Offset),
		nullIfZero(r.Origin.Timestamp), r.Timestamp,
		r.Key, r.Value, keys, values,
		r.RetryCount, class, message,
		string(r.Reason), string(r.Status), r.Route, nullIfZero(r.DueAt),
		now, now, changedByRedrive, template, fingerprint.Of(class, template, topic),
	}
}

// cleanText makes bytes from headers storable as PostgreSQL text, which refuses invalid
// UTF-8 and NUL. Only descriptive fields pass through here; the exact bytes stay in the
// headers.
func cleanText(s string) string {
	if utf8.ValidString(s) && !strings.ContainsRune(s, 0) {
		return s
	}
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD")
}

func nullIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func nullIfNegative[T int32 | int64](v T) any {
	if v < 0 {
		return nil
	}
	return v
}

func nullIfZero(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t
}

// Get returns one record.
func (s *Records) Get(ctx context.Context, id int64) (Record, error) {
	row, err := queries.GetRecord(ctx, s.pool, id)
	if err != nil {
		return Record{}, interpretError(err)
	}
	return recordFromRow(row), nil
}

// Claim is a batch of due scheduled records leased to one worker. Token identifies this
// claim in MarkRedriven and ReleaseClaim.
type Claim struct {
	Token   string
	Records []Record
}

// ClaimDue leases up to limit scheduled records of route (every route when "") that are
// due now, oldest due first. A worker claims only its own routes' records, whose
// allow-list and header policy it knows.
//
// Claiming is a short transaction that sets a lease (owner token and expiry) on rows locked
// with FOR UPDATE SKIP LOCKED: concurrent claimers never get the same row. The worker then
// produces the records and calls MarkRedriven, which succeeds only for rows still leased to
// its token. If the worker dies in between, the lease expires and another worker claims the
// rows again, so nothing is lost; a record produced just before such a crash is produced
// again (at-least-once; downstream consumers de-duplicate on the redrive id header).
func (s *Records) ClaimDue(ctx context.Context, route, owner string, limit int, lease time.Duration) (Claim, error) {
	if limit <= 0 || lease <= 0 {
		return Claim{}, &ValidationError{Field: "claim", Reason: "limit and lease must be positive"}
	}
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand never fails on supported platforms
	claim := Claim{Token: owner + "/" + hex.EncodeToString(b[:])}
	now := s.now()
	rows, err := queries.ClaimDue(ctx, s.pool, dbsqlc.ClaimDueParams{Token: claim.Token, LeaseUntil: now.Add(lease), Now: now,
		Route: route, MaxRecords: int32(limit)})
	if err != nil {
		return Claim{}, interpretError(err)
	}
	claim.Records = make([]Record, len(rows))
	for i, row := range rows {
		claim.Records[i] = recordFromRow(dbsqlc.GetRecordRow(row))
	}
	sort.Slice(claim.Records, func(i, j int) bool {
		a, b := claim.Records[i], claim.Records[j]
		return a.DueAt.Before(b.DueAt) || a.DueAt.Equal(b.DueAt) && a.ID < b.ID
	})
	return claim, nil
}

// Redriven says where a claimed record was produced.
type Redriven struct {
	ID       int64
	Produced Coordinates
}

// MarkRedriven records produced claimed rows as redriven and returns how many it marked.
// Rows no longer leased to token (the lease expired and another worker claimed them) are
// left alone and not counted.
func (s *Records) MarkRedriven(ctx context.Context, token string, done []Redriven) (int, error) {
	ids := make([]int64, len(done))
	topics := make([]string, len(done))
	partitions := make([]int32, len(done))
	offsets := make([]int64, len(done))
	for i, d := range done {
		ids[i], topics[i], partitions[i], offsets[i] = d.ID, d.Produced.Topic, d.Produced.Partition, d.Produced.Offset
	}
	n, err := queries.MarkRedriven(ctx, s.pool, dbsqlc.MarkRedrivenParams{Now: s.now(), Token: token, Ids: ids, Topics: topics,
		Partitions: partitions, Offsets: offsets})
	return int(n), interpretError(err)
}

// ReleaseClaim gives claimed rows back, due again at dueAt (for a produce that failed
// transiently), and returns how many it released.
func (s *Records) ReleaseClaim(ctx context.Context, token string, ids []int64, dueAt time.Time) (int, error) {
	n, err := queries.ReleaseClaim(ctx, s.pool, dbsqlc.ReleaseClaimParams{DueAt: dueAt, Now: s.now(), Token: token, Ids: ids})
	return int(n), interpretError(err)
}

// Stats summarizes the store for dashboards.
type Stats struct {
	Counts []StatCount
	// OldestParked is when the oldest parked record was stored; zero when none is parked.
	OldestParked time.Time
}

// StatCount is the number of records with one DLQ topic, original topic, reason and status.
type StatCount struct {
	DLQTopic      string
	OriginalTopic string
	Reason        Reason
	Status        Status
	Count         int64
}

// Stats counts records by topic, reason and status. It scans the table: meant for a
// dashboard refreshed every few seconds, not for a hot path.
func (s *Records) Stats(ctx context.Context) (Stats, error) {
	var st Stats
	rows, err := queries.Stats(ctx, s.pool)
	if err != nil {
		return st, interpretError(err)
	}
	for _, row := range rows {
		st.Counts = append(st.Counts, StatCount{DLQTopic: row.DlqTopic, OriginalTopic: row.OriginalTopic, Reason: Reason(row.Reason),
			Status: Status(row.Status), Count: row.Count})
	}
	st.OldestParked, err = queries.OldestParked(ctx, s.pool)
	if errors.Is(err, pgx.ErrNoRows) {
		return st, nil
	}
	st.OldestParked = st.OldestParked.UTC()
	return st, interpretError(err)
}

// scanner is a pgx.Row or pgx.CollectableRow.
type scanner interface{ Scan(dest ...any) error }

// collect reads every row with scan.
func collect[T any](rows pgx.Rows, scan func(scanner) (T, error)) ([]T, error) {
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (T, error) { return scan(row) })
	return out, interpretError(err)
}

// scanRecord reads recordColumns or summaryColumns.
func scanRecord(row scanner) (Record, error) {
	var (
		r                                       Record
		origTopic, leaseOwner, target, replayID *string
		origPartition, producedPartition        *int32
		origOffset, producedOffset, jobID       *int64
		origTS, dueAt, leaseUntil               *time.Time
		headerKeys, headerValues                [][]byte
		keySize, valueSize                      *int32
	)
	err := row.Scan(&r.ID, &r.DLQ.Topic, &r.DLQ.Partition, &r.DLQ.Offset,
		&origTopic, &origPartition, &origOffset, &origTS, &r.Timestamp,
		&r.Key, &r.Value, &headerKeys, &headerValues,
		&r.RetryCount, &r.ErrorClass, &r.ErrorMessage, &r.Reason, &r.Status, &r.Route, &dueAt,
		&leaseOwner, &leaseUntil, &target, &producedPartition, &producedOffset, &replayID, &jobID,
		&r.StoredAt, &r.ChangedAt, &r.ChangedBy, &keySize, &valueSize)
	if err != nil {
		return Record{}, err
	}
	r.KeySize, r.ValueSize = sizeOf(keySize), sizeOf(valueSize)
	r.Origin = Origin{Topic: deref(origTopic), Partition: -1, Offset: -1, Timestamp: deref(origTS)}
	if origPartition != nil {
		r.Origin.Partition = *origPartition
	}
	if origOffset != nil {
		r.Origin.Offset = *origOffset
	}
	if len(headerKeys) > 0 {
		r.Headers = make([]Header, len(headerKeys))
		for i := range headerKeys {
			r.Headers[i] = Header{Key: string(headerKeys[i]), Value: headerValues[i]}
		}
	}
	r.DueAt, r.LeaseOwner, r.LeaseUntil = deref(dueAt), deref(leaseOwner), deref(leaseUntil)
	r.ReplayID, r.JobID = deref(replayID), deref(jobID)
	if target != nil && producedPartition != nil && producedOffset != nil {
		r.Produced = &Coordinates{Topic: *target, Partition: *producedPartition, Offset: *producedOffset}
	}
	utc(&r.Timestamp, &r.Origin.Timestamp, &r.DueAt, &r.LeaseUntil, &r.StoredAt, &r.ChangedAt)
	return r, nil
}

func sizeOf(n *int32) int {
	if n == nil {
		return -1
	}
	return int(*n)
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// utc puts times read from PostgreSQL (in the session time zone) in UTC, leaving zero
// times zero.
func utc(ts ...*time.Time) {
	for _, t := range ts {
		if !t.IsZero() {
			*t = t.UTC()
		}
	}
}
