package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// A job reads its selection a page at a time.

// MaxJobPage bounds a job's page (JobRecords), twice a listing's: each page a job leases,
// produces and finishes costs a share of work of its own (statements, transactions,
// the pipeline's hand-overs), which larger pages spread over more records.
const MaxJobPage = 2 * MaxPageSize

// JobRecords returns up to limit records of job with ids above afterID, lowest first: the
// records it selects (by ids, or by filter) plus the rows it already changed, which a
// crashed holder left behind (replaying, or finished before it saved its progress) and
// which no longer match the filter's statuses. They are read as their rows are, without
// their leases: a record a replay holds reads as parked or scheduled (BeginReplays
// decides who may take it). Each holds only what a job needs (scanJobRecord): its id,
// original topic and partition, timestamp, key, value, headers, route, status, job and
// reason (a record without payload is not replayed as it is: Record.NoPayload).
func (s *Jobs) JobRecords(ctx context.Context, job Job, afterID int64, limit int) ([]Record, error) {
	if limit <= 0 || limit > MaxJobPage {
		return nil, &ValidationError{Field: "limit", Reason: fmt.Sprintf("must be 1..%d", MaxJobPage)}
	}
	// One round trip, one implicit transaction: sqlPageSettings hold for the page's query.
	batch := &pgx.Batch{}
	batch.Queue(sqlPageSettings)
	if job.Filter != nil {
		cond, args := job.Filter.whereInPage([]any{afterID, limit, job.ID})
		batch.Queue(fmt.Sprintf(sqlJobRecordsByFilter, cond), args...)
	} else {
		batch.Queue(sqlJobRecordsByIDs, afterID, limit, job.RecordIDs)
	}
	results := s.pool.SendBatch(ctx, batch)
	defer results.Close()
	if _, err := results.Exec(); err != nil {
		return nil, interpretError(err)
	}
	rows, err := results.Query()
	if err != nil {
		return nil, interpretError(err)
	}
	recs, err := scanJobRecords(rows, limit)
	return recs, interpretError(err)
}

// scanJobRecords reads rows of jobRecordColumns into records. A page of a thousand 1 KiB
// records is most of what a job's own process spends per record, so the row's values are
// scanned into the same variables each time, and its headers as flat arrays, not through
// scanRecord's every column and reflection on [][]byte.
func scanJobRecords(rows pgx.Rows, limit int) ([]Record, error) {
	out := make([]Record, 0, limit)
	var (
		r             Record
		origTopic     *string
		origPartition *int32
		jobID         *int64
		keys, values  pgtype.FlatArray[[]byte]
	)
	_, err := pgx.ForEachRow(rows, []any{&r.ID, &origTopic, &origPartition, &r.Timestamp, &r.Key, &r.Value,
		&keys, &values, &r.Route, &r.Status, &jobID, &r.Reason}, func() error {
		rec := Record{ID: r.ID, JobID: deref(jobID)}
		rec.Route, rec.Reason = r.Route, r.Reason
		rec.Status, rec.Key, rec.Value, rec.Timestamp = r.Status, r.Key, r.Value, r.Timestamp.UTC()
		rec.Origin = Origin{Topic: deref(origTopic), Partition: -1, Offset: -1}
		if origPartition != nil {
			rec.Origin.Partition = *origPartition
		}
		if len(keys) != len(values) {
			return fmt.Errorf("store: record %d has %d header keys and %d values", r.ID, len(keys), len(values))
		}
		if len(keys) > 0 {
			rec.Headers = make([]Header, len(keys))
			for i := range keys {
				rec.Headers[i] = Header{Key: string(keys[i]), Value: values[i]}
			}
		}
		out = append(out, rec)
		return nil
	})
	return out, err
}

// sqlPageSettings make a job's page read its records by id and stop at the page's end,
// merging in its leases in the same order (jobPage). The planner cannot estimate the
// page's test of a lease: it takes it to pass 0.5 % of the records, and when that made
// fewer than a page it chose to read every record after the cursor and sort them (and to
// compile that plan with JIT), for each page. A sequential scan of replay_leases for each
// record came from a plan a connection cached while the table was known empty.
const sqlPageSettings = `SELECT set_config('enable_seqscan', 'off', true), set_config('enable_sort', 'off', true),
	set_config('enable_nestloop', 'off', true), set_config('enable_hashjoin', 'off', true),
	set_config('jit', 'off', true)`

// $1 after id, $2 limit, $3 job, then the filter's parameters: the rows the filter
// selects, those the job finished, and those it leased (a crashed holder's).
const sqlJobRecordsByFilter = `SELECT ` + jobRecordColumns + ` FROM ` + jobPage + `
	WHERE id > $1 AND (%s OR job_id = $3 AND status IN ('replayed', 'discarded') OR lp.lease_job = $3)
	ORDER BY id LIMIT $2`

// $1 after id, $2 limit, $3 ids.
const sqlJobRecordsByIDs = `SELECT ` + jobRecordColumns + ` FROM ` + jobPage + `
	WHERE id > $1 AND id = ANY($3) ORDER BY id LIMIT $2`
