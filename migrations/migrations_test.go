package migrations_test

import (
	"context"
	"database/sql"
	"io/fs"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/dlqops/dlq/internal/testenv"
	"github.com/dlqops/dlq/migrations"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func TestEveryMigrationHasUpAndDown(t *testing.T) {
	t.Parallel()
	files, err := fs.Glob(migrations.FS, "*.sql")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		b, err := fs.ReadFile(migrations.FS, f)
		require.NoError(t, err)
		require.Contains(t, string(b), "-- +goose Up", f)
		require.Contains(t, string(b), "-- +goose Down", f)
	}
}

// Down undoes Up completely: up, down to zero, and up again all succeed, and down leaves
// no table behind.
func TestMigrationsGoDownAndUpAgain(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, p := provider(t)
	_, err := p.Up(ctx)
	require.NoError(t, err)
	_, err = p.DownTo(ctx, 0)
	require.NoError(t, err)
	var tables []string
	rows, err := db.QueryContext(ctx, `SELECT table_name FROM information_schema.tables
		WHERE table_schema = current_schema() AND table_name <> 'goose_db_version'`)
	require.NoError(t, err)
	for rows.Next() {
		var name string
		require.NoError(t, rows.Scan(&name))
		tables = append(tables, name)
	}
	require.NoError(t, rows.Err())
	require.Empty(t, tables, strings.Join(tables, ", "))
	_, err = p.Up(ctx)
	require.NoError(t, err)
}

// 00015 moves the records a runner of an earlier version left replaying to replay_leases,
// keeping their job, holder and replay id, and puts their rows back in the status they
// had: a parked one parked, a scheduled one scheduled with its due time and the lease in
// its lease columns, so that no redrive claims it while the lease holds.
func TestReplayingRowsMoveToReplayLeases(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, p := provider(t)
	_, err := p.UpTo(ctx, 14)
	require.NoError(t, err)
	_, err = db.ExecContext(ctx, `INSERT INTO dead_letters (dlq_topic, dlq_partition, dlq_offset, record_timestamp,
			header_keys, header_values, retry_count, error_class, error_message, reason, status, route,
			due_at, lease_owner, lease_until, replay_id, job_id, prior_status, stored_at, changed_at, changed_by)
		VALUES ('d', 0, 1, now(), '{}', '{}', 0, 'e', 'm', 'exhausted', 'replaying', 'r',
			NULL, 'w/0', now() + interval '1 minute', '7-1', 7, 'parked', now(), now(), 'w'),
		('d', 0, 2, now(), '{}', '{}', 0, 'e', 'm', 'backoff', 'replaying', 'r',
			'2026-03-01 12:00:00+00', 'w/0', '2026-03-01 12:05:00+00', '7-2', 7, 'scheduled', now(), now(), 'w'),
		('d', 0, 3, now(), '{}', '{}', 0, 'e', 'm', 'exhausted', 'parked', 'r',
			NULL, NULL, NULL, NULL, NULL, NULL, now(), now(), 'w')`)
	require.NoError(t, err)
	_, err = p.UpTo(ctx, 15)
	require.NoError(t, err)

	type row struct {
		status, owner, leaseOwner, replayID string
		due                                 *time.Time
	}
	got := map[int64]row{}
	rows, err := db.QueryContext(ctx, `SELECT d.dlq_offset, d.status, coalesce(l.owner, '-'), coalesce(d.lease_owner, '-'),
			coalesce(l.replay_id, '-'), d.due_at
		FROM dead_letters d LEFT JOIN replay_leases l ON l.record_id = d.id`)
	require.NoError(t, err)
	for rows.Next() {
		var off int64
		var r row
		require.NoError(t, rows.Scan(&off, &r.status, &r.owner, &r.leaseOwner, &r.replayID, &r.due))
		got[off] = r
	}
	require.NoError(t, rows.Err())
	due := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	require.Equal(t, row{status: "parked", owner: "w/0", leaseOwner: "-", replayID: "7-1"}, got[1])
	require.Equal(t, "scheduled", got[2].status)
	require.Equal(t, "w/0", got[2].owner)
	require.Equal(t, "w/0", got[2].leaseOwner, "the lease stays in the row of a scheduled record")
	require.Equal(t, "7-2", got[2].replayID)
	require.True(t, due.Equal(*got[2].due))
	require.Equal(t, row{status: "parked", owner: "-", leaseOwner: "-", replayID: "-"}, got[3])
}

// 00016 gives every existing audit row its records as runs of consecutive ids, which a
// record's history now searches.
func TestAuditRowsGetTheirRecordRuns(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, p := provider(t)
	_, err := p.UpTo(ctx, 15)
	require.NoError(t, err)
	_, err = db.ExecContext(ctx, `INSERT INTO audit_log (at, actor, action, record_ids, affected, outcome)
		VALUES (now(), 'ada', 'finish_replay', '{7,1,2,3}', 4, 'ok'), (now(), 'ada', 'pause_route', NULL, 0, 'ok')`)
	require.NoError(t, err)
	_, err = p.UpTo(ctx, 16)
	require.NoError(t, err)
	var runs []string
	rows, err := db.QueryContext(ctx, `SELECT coalesce(record_ranges::text, '-') FROM audit_log ORDER BY id`)
	require.NoError(t, err)
	for rows.Next() {
		var r string
		require.NoError(t, rows.Scan(&r))
		runs = append(runs, r)
	}
	require.NoError(t, rows.Err())
	require.Equal(t, []string{"{[1,4),[7,8)}", "-"}, runs)
}

// Outcomes that a runner of an earlier version wrote into lease rows and did not fold yet
// are folded into their records' rows when the batches arrive (migration 00018); a lease
// without an outcome stays, replaying; the way back moves a batch's outcome into its lease.
func TestUnfoldedOutcomesFoldWhenBatchesArrive(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, p := provider(t)
	_, err := p.UpTo(ctx, 17)
	require.NoError(t, err)
	_, err = db.ExecContext(ctx, `INSERT INTO dead_letters (dlq_topic, dlq_partition, dlq_offset, record_timestamp,
			header_keys, header_values, retry_count, error_class, error_message, reason, status, route,
			stored_at, changed_at, changed_by)
		SELECT 'd', 0, g, now(), '{}', '{}', 0, 'e', 'm', 'exhausted', 'parked', 'r', now(), now(), 'w'
		FROM generate_series(1, 2) g`)
	require.NoError(t, err)
	_, err = db.ExecContext(ctx, `INSERT INTO replay_leases (record_id, job_id, owner, until, replay_id,
			replayed_at, replayed_by, target_topic, produced_partition, produced_offset)
		VALUES (1, 7, 'w/0', now(), '7-1', '2026-03-01 12:00:00+00', 'ada', 'orders', 2, 40),
			(2, 7, 'w/0', now() + interval '1 minute', '7-2', NULL, NULL, NULL, NULL, NULL)`)
	require.NoError(t, err)
	_, err = p.UpTo(ctx, 18)
	require.NoError(t, err)

	var status, topic, replayID, by string
	var partition, offset int64
	var at time.Time
	require.NoError(t, db.QueryRowContext(ctx, `SELECT status, target_topic, produced_partition, produced_offset,
			replay_id, changed_at, changed_by FROM dead_letters WHERE dlq_offset = 1`).
		Scan(&status, &topic, &partition, &offset, &replayID, &at, &by))
	require.Equal(t, "replayed", status)
	require.Equal(t, "orders", topic)
	require.Equal(t, int64(2), partition)
	require.Equal(t, int64(40), offset)
	require.Equal(t, "7-1", replayID)
	require.Equal(t, "ada", by)
	require.True(t, at.Equal(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)))
	var leases []int64
	rows, err := db.QueryContext(ctx, `SELECT record_id FROM replay_states WHERE replayed_at IS NULL ORDER BY record_id`)
	require.NoError(t, err)
	for rows.Next() {
		var id int64
		require.NoError(t, rows.Scan(&id))
		leases = append(leases, id)
	}
	require.NoError(t, rows.Err())
	require.Equal(t, []int64{2}, leases, "the folded lease is gone, the one without an outcome stays")

	// Replayed in a batch: the way back puts the outcome into the lease row.
	_, err = db.ExecContext(ctx, `WITH b AS (INSERT INTO replay_batches (job_id, record_ids, replayed_at, replayed_by,
			topics, partitions, offsets) VALUES (7, '{2}', now(), 'ada', '{orders}', '{1}', '{41}') RETURNING id)
		UPDATE replay_leases SET batch_id = (SELECT id FROM b), batch_idx = 1 WHERE record_id = 2`)
	require.NoError(t, err)
	_, err = p.DownTo(ctx, 17)
	require.NoError(t, err)
	require.NoError(t, db.QueryRowContext(ctx, `SELECT target_topic, produced_offset FROM replay_leases
		WHERE record_id = 2 AND replayed_at IS NOT NULL`).Scan(&topic, &offset))
	require.Equal(t, "orders", topic)
	require.Equal(t, int64(41), offset)
}

// provider opens a fresh schema of its own and a goose provider of the migrations on it;
// both are closed when the test ends.
func provider(t *testing.T) (*sql.DB, *goose.Provider) {
	t.Helper()
	cfg, err := pgx.ParseConfig(testenv.Schema(t))
	require.NoError(t, err)
	db := stdlib.OpenDB(*cfg)
	t.Cleanup(func() { _ = db.Close() })
	p, err := goose.NewProvider(goose.DialectPostgres, db, migrations.FS, goose.WithDisableGlobalRegistry(true))
	require.NoError(t, err)
	return db, p
}
