package store

// The SQL the store builds at run time. The fixed statements live in queries/ and are
// generated into dbsqlc (sqlc.yaml); what is here takes a filter, or is a copy's stage,
// or a job's page. Statements that take a filter are fmt templates whose %s is the WHERE
// condition Filter.where renders; values are always bind parameters.

// recordColumns is what scanRecord reads: a whole record. The generated statements that
// return one (GetRecord, ClaimDue, Discard, RetryNow) repeat these columns;
// TestGeneratedRecordReadsMatchTheListing holds the two together.
const recordColumns = recordLead + `key, value, header_keys, header_values,` + recordTrail

// jobRecordColumns are what a job needs of a record (scanJobRecord), FROM jobPage: what to
// produce and where, and whether the job finished it already. A record a replay holds
// reads as its row has it, parked or scheduled; a replayed one as replayed by its lease's
// job, folded into its row or not.
const jobRecordColumns = `id, original_topic, original_partition, record_timestamp, key, value,
	header_keys, header_values, route,
	CASE WHEN lp.lease_done THEN 'replayed' ELSE status END,
	CASE WHEN lp.lease_done THEN lp.lease_job ELSE job_id END, reason`

// jobPage is dead_letters with the replay lease of each row after the cursor ($1) (lp:
// lease_job, lease_done; NULLs without one): a page of a job reads each record's lease
// once, where a probe per use (the status, the job, the filter's test, the job's own
// leases) read it four times. Under sqlPageSettings the two are merged in id order, each
// read by its key from the cursor on, so that a page reads the leases of its range once
// instead of looking each record's up (a probe per record was as much of the database's
// work for a page as reading its records), and never hashes the whole lease table, which
// a running job fills faster than its statistics follow.
const jobPage = `dead_letters LEFT JOIN (
		SELECT l.record_id AS lease_record, l.job_id AS lease_job, ` + leaseReplayed + ` AS lease_done
		FROM replay_leases l WHERE l.record_id > $1) lp ON lp.lease_record = dead_letters.id`

// leaseReplayed is true when a lease (l) is replayed: every record of its batch was
// produced, or its batch holds an offset at its place (read only when some were not).
const leaseReplayed = `EXISTS (SELECT 1 FROM replay_batches rb WHERE rb.id = l.batch_id
	AND (rb.all_produced OR rb.offsets[l.batch_idx] IS NOT NULL))`

// summaryColumns is a record without its key, value and headers, in recordColumns' shape:
// what a listing reads, so that a page of 1 MiB records costs what a page of small ones does.
const summaryColumns = recordLead + `NULL::bytea, NULL::bytea, NULL::bytea[], NULL::bytea[],` + recordTrail

const recordLead = `id, dlq_topic, dlq_partition, dlq_offset,
	original_topic, original_partition, original_offset, original_timestamp, record_timestamp, `

// octet_length reads a bytea's size from its header, without fetching a TOASTed value. A
// record with a replay lease (migration 00015) reads as replaying, with the lease's holder,
// job and replay id; once the lease's batch holds the replay's outcome (00018) and until
// the runner folds it into the row, as replayed where it was produced, when and by whom
// (replay_states). Each lookup is one probe of the small replay_leases table's primary
// key, and of replay_batches' for the outcome.
const recordTrail = `
	retry_count, error_class, error_message, reason,
	` + derivedStatus + `, route, due_at,
	CASE WHEN ` + leased + ` THEN ` + ofOpenLease + `owner` + openLeaseEnd + ` ELSE lease_owner END,
	CASE WHEN ` + leased + ` THEN ` + ofOpenLease + `until` + openLeaseEnd + ` ELSE lease_until END,
	coalesce(` + ofLease + `target_topic` + leaseEnd + `, target_topic),
	coalesce(` + ofLease + `produced_partition` + leaseEnd + `, produced_partition),
	coalesce(` + ofLease + `produced_offset` + leaseEnd + `, produced_offset),
	coalesce(` + ofLease + `replay_id` + leaseEnd + `, replay_id), coalesce(` + ofLease + `job_id` + leaseEnd + `, job_id),
	stored_at, coalesce(` + ofLease + `replayed_at` + leaseEnd + `, changed_at),
	coalesce(` + ofLease + `replayed_by` + leaseEnd + `, changed_by), octet_length(key), octet_length(value)`

// derivedStatus is the status of a dead_letters row (named so, not aliased) as every
// reader sees it: replaying while a replay holds it, replayed once its lease's batch holds
// its outcome, else the row's.
const derivedStatus = `CASE ` + ofLease + `replayed_at IS NULL` + leaseEnd + `
		WHEN true THEN 'replaying' WHEN false THEN 'replayed' ELSE dead_letters.status END`

// leased is true for a dead_letters row (named so, not aliased) that has a replay lease:
// it is replaying, or replayed and not yet folded. Either way its row's status is not
// its status, and no other transition may take it.
const leased = `EXISTS (SELECT 1 FROM replay_leases l WHERE l.record_id = dead_letters.id)`

// leasedInPage is leased for a row of jobPage: its lease is merged with it already.
const leasedInPage = `lp.lease_done IS NOT NULL`

// ofLease is the start of a read of a column of the lease on a dead_letters row (named
// so), NULL without one: ofLease + "owner" + leaseEnd. ofOpenLease + "owner" + openLeaseEnd
// reads NULL also once the lease holds an outcome (a replayed record has no holder).
const (
	ofLease      = `(SELECT l.`
	ofOpenLease  = `(SELECT CASE WHEN l.replayed_at IS NULL THEN l.`
	leaseEnd     = ` FROM replay_states l WHERE l.record_id = dead_letters.id)`
	openLeaseEnd = ` END` + leaseEnd
)

// insertColumns are the columns StoreBatch writes, in insertRow's order.
var insertColumns = []string{
	"dlq_topic", "dlq_partition", "dlq_offset",
	"original_topic", "original_partition", "original_offset", "original_timestamp", "record_timestamp",
	"key", "value", "header_keys", "header_values",
	"retry_count", "error_class", "error_message", "reason", "status", "route", "due_at",
	"stored_at", "changed_at", "changed_by", "message_template", "fingerprint",
}

const insertColumnList = `dlq_topic, dlq_partition, dlq_offset,
	original_topic, original_partition, original_offset, original_timestamp, record_timestamp,
	key, value, header_keys, header_values,
	retry_count, error_class, error_message, reason, status, route, due_at,
	stored_at, changed_at, changed_by, message_template, fingerprint`

// changedByRedrive is changed_by of the rows StoreBatch writes.
const changedByRedrive = "redrive"

// The stage lives as long as the connection and empties at every commit, so that a batch
// costs no catalog change.
const sqlCreateStage = `CREATE TEMP TABLE IF NOT EXISTS dead_letters_stage ON COMMIT DELETE ROWS AS
	SELECT ` + insertColumnList + ` FROM dead_letters WITH NO DATA`

const sqlInsertFromStage = `INSERT INTO dead_letters (` + insertColumnList + `)
	SELECT ` + insertColumnList + ` FROM dead_letters_stage
	ORDER BY dlq_topic, dlq_partition, dlq_offset
	ON CONFLICT (dlq_topic, dlq_partition, dlq_offset) DO NOTHING
	RETURNING dlq_topic, dlq_partition, dlq_offset`

// $1 below id, $2 limit, then the filter's parameters.
const sqlListRecords = `SELECT ` + summaryColumns + ` FROM dead_letters
	WHERE id < $1 AND %s ORDER BY id DESC LIMIT $2`

// $1 after id, $2 limit, then the filter's parameters.
const sqlListRecordsAfter = `SELECT ` + recordColumns + ` FROM dead_letters
	WHERE id > $1 AND %s ORDER BY id LIMIT $2`

const sqlCountRecords = `SELECT count(*) FROM dead_letters WHERE %s`

// $1 below id, $2 limit, then the filter's parameters. A row without record_ids
// (storedIDs) has its ids in its runs.
const sqlListAudit = `SELECT id, at, actor, action,
		CASE WHEN record_ids IS NULL AND record_ranges IS NOT NULL
			THEN ARRAY(SELECT g FROM unnest(record_ranges) r, generate_series(lower(r), upper(r) - 1) g ORDER BY g)
			ELSE record_ids END,
		filter, job_id, route, affected, outcome,
		request_id, reason, client_request_id, edit
	FROM audit_log WHERE id < $1 AND %s ORDER BY id DESC LIMIT $2`
