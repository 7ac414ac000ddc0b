package store

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/dlqops/dlq/internal/store/dbsqlc"
)

// The replay lease protocol. A replay holds a record by its row in replay_leases, keyed
// by the record's id: the key is the lock. Leasing a page writes only those narrow rows,
// never the record's wide dead_letters row (a row lock there wrote each row's xmax, dirtied
// every heap page of the page and, after each checkpoint, a full-page image of it: ~1.4 MB
// of WAL per 1,000 records and most of a lease's time).
//
// A lease (beginReplays) is two statements in one READ COMMITTED transaction:
//  1. LeaseReplays (queries/leases.sql) inserts the leases of the records its snapshot sees reservable (or
//     beginFreshReplays copies in those of every record, and fails on any lease key it
//     meets), with the batch they form (replay_batches), where their outcome is written
//     once (FinishReplays);
//  2. RecheckReplays, on a new snapshot, deletes the new leases whose record is no
//     longer reservable, and writes the lease into a scheduled record's row (lease_until),
//     which a redrive's claim reads.
//
// A writer that must not change a record a replay holds (a discard, a reservation by a
// job that names its records, retry-now) first takes the same keys (lockRecords): it
// inserts a row for each id (ON CONFLICT DO NOTHING) and deletes it in the same
// transaction, before anything else reads the table. PostgreSQL makes a later insert of
// a key wait for the transaction that inserted it while that transaction is open, even
// when that transaction deleted it again, so the key stays taken until the writer ends;
// nobody ever sees the rows. The writer then locks the rows and checks, in statements of
// their own, that no lease exists. Every ordering of a writer W and a lease L on a record:
//   - L's insert first, W's key after: W's insert waits for L. If L commits, W's check
//     (a later snapshot) sees the lease and W refuses; if L rolls back or its recheck
//     dropped the lease, W goes on.
//   - W's key first, L's insert after: L's insert waits for W. When W ends its key row is
//     gone and L inserts; L's recheck runs on a snapshot taken after W committed, so it
//     sees the discard or the reservation and drops the lease.
//   - W committed before L's insert began: L's snapshot already sees W's change.
//   - L committed before W began: W's key insert meets the lease and W's check sees it.
//
// A redrive's claim takes no key: it claims only scheduled records, whose lease_until
// the recheck's UPDATE writes (waiting for a claim in progress and re-reading the row it
// committed), and it skips rows whose lease_until is in the future. Two leases of one
// record (two jobs, a job and a single replay) meet on the key itself: the second waits,
// then finds the first's lease and takes it only under the rules of LeaseReplays.
// Keys are always taken in id order, so two key takers never deadlock.

// beginReplays leases ids for owner until until, under job (nil for none), with the
// replay ids prefix+id or replayID (when not nil; both nil: none): the two statements of the protocol above.
// The leases form a new batch (replay_batches), each at its place in ids, counted from 1:
// it returns the batch's id and the replay id of each record it leased.
func beginReplays(ctx context.Context, tx pgx.Tx, ids []int64, now time.Time, actor, owner string, until time.Time,
	job *int64, prefix, replayID *string) (batch int64, begun map[int64]string, err error) {
	begun = make(map[int64]string, len(ids))
	var inserted, held []int64
	rows, err := queries.LeaseReplays(ctx, tx, dbsqlc.LeaseReplaysParams{Job: job, Owner: owner, Until: until, ReplayID: replayID,
		Prefix: prefix, Ids: ids, Now: now})
	for _, row := range rows {
		begun[row.RecordID] = deref(row.ReplayID) // NULL: a lease without a replay id
		batch = deref(row.BatchID)
		if row.IsNew {
			inserted = append(inserted, row.RecordID)
		} else {
			held = append(held, row.RecordID)
		}
	}
	if err != nil || len(begun) == 0 {
		return batch, begun, err
	}
	return batch, begun, recheckReplays(ctx, tx, begun, inserted, held, now, actor, owner, until, job)
}

// beginFreshReplays is beginReplays for a job's page whose records no lease holds, which
// nearly every page is: it copies in the lease of each record of ids (sorted), with the
// replay id prefix+id, reading nothing (the recheck reads each record's row once, and
// drops the leases of those it may not take). COPY writes the leases a heap page at a
// time, where an INSERT writes them one by one. A lease key it meets (a lease, or a
// writer's key, that committed) fails the copy and the transaction: it returns
// errLeaseKeyTaken, and the caller runs the transaction again with beginReplays.
func beginFreshReplays(ctx context.Context, tx pgx.Tx, ids []int64, now time.Time, actor, owner string, until time.Time,
	job int64, prefix string) (batch int64, begun map[int64]string, err error) {
	batch, err = queries.NewBatch(ctx, tx, dbsqlc.NewBatchParams{Job: job, Ids: ids})
	if err != nil {
		return 0, nil, err
	}
	begun = make(map[int64]string, len(ids))
	_, err = tx.CopyFrom(ctx, pgx.Identifier{"replay_leases"}, leaseColumns, pgx.CopyFromSlice(len(ids), func(i int) ([]any, error) {
		rid := prefix + strconv.FormatInt(ids[i], 10)
		begun[ids[i]] = rid
		return []any{ids[i], job, owner, until, rid, batch, int32(i + 1)}, nil
	}))
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "23505" && pgErr.ConstraintName == "replay_leases_pkey" {
		return 0, nil, errLeaseKeyTaken
	}
	if err != nil {
		return 0, nil, err
	}
	return batch, begun, recheckReplays(ctx, tx, begun, ids, nil, now, actor, owner, until, &job)
}

// leaseColumns are the columns beginFreshReplays copies, in its rows' order.
var leaseColumns = []string{"record_id", "job_id", "owner", "until", "replay_id", "batch_id", "batch_idx"}

// recheckReplays is the protocol's second statement: it drops from begun the records of
// the new leases (inserted) and of those taken over (held) that may not be leased.
func recheckReplays(ctx context.Context, tx pgx.Tx, begun map[int64]string, inserted, held []int64,
	now time.Time, actor, owner string, until time.Time, job *int64) error {
	from, to, each := readRange(inserted)
	lost, err := queries.RecheckReplays(ctx, tx, dbsqlc.RecheckReplaysParams{Owner: owner, Job: job, FromID: from, ToID: to,
		EachID: each, Held: held, Until: until, Now: now, Actor: actor, Inserted: inserted})
	if err != nil {
		return err
	}
	for _, id := range lost {
		delete(begun, id)
	}
	return nil
}

// readRange says how RecheckReplays reads the rows of ids: as the range from..to when
// it holds at most twice as many ids (a job's page nearly always does), else id by id
// (each).
func readRange(ids []int64) (from, to *int64, each []int64) {
	if len(ids) == 0 {
		return nil, nil, nil
	}
	lo, hi := slices.Min(ids), slices.Max(ids)
	if hi-lo < 2*int64(len(ids)) {
		return &lo, &hi, nil
	}
	return nil, nil, ids
}

// errLeaseKeyTaken: beginFreshReplays met a lease key; the transaction is aborted.
var errLeaseKeyTaken = errors.New("store: a record of the page has a lease")

// lockRecords takes the lease keys of ids (see the protocol above), then locks their rows
// in id order, and returns how many rows exist. The statements that follow, each on a
// snapshot of its own, see any lease committed before and no lease can start until the
// transaction ends.
func lockRecords(ctx context.Context, tx pgx.Tx, ids []int64) (int, error) {
	guarded, err := sorted(queries.Guard(ctx, tx, ids))
	if err != nil {
		return 0, err
	}
	if len(guarded) > 0 {
		if err := queries.Unguard(ctx, tx, guarded); err != nil {
			return 0, err
		}
	}
	locked, err := queries.LockRecords(ctx, tx, ids)
	return len(locked), err
}
