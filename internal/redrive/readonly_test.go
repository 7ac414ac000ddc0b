package redrive_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// A failover to a read-only node and back, at one address: the worker's sessions are cut
// and the ones it opens again are read-only (default_transaction_read_only set for the
// database, as on a standby), then new sessions are writable again (promotion) while the
// pooled ones stay read-only. The worker stalls without committing past anything it
// could not store, recycles its sessions on SQLSTATE 25006, becomes ready again by
// itself, the run finishes, and every record is accounted for.
func TestPostgresReadOnlyRecovers(t *testing.T) {
	t.Parallel()
	const n = 3000
	r := startPGOutageRun(t, "readonly-", n)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	admin, err := pgx.Connect(ctx, r.pg.URL())
	require.NoError(t, err)
	t.Cleanup(func() { _ = admin.Close(context.Background()) })
	exec := func(sql string) {
		t.Helper()
		_, err := admin.Exec(context.Background(), sql)
		require.NoError(t, err, sql)
	}

	exec("ALTER DATABASE postgres SET default_transaction_read_only = on")
	exec("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = 'postgres' AND pid <> pg_backend_pid()")
	require.Eventually(t, ready(r.e, false), time.Minute, 100*time.Millisecond, "ready while PostgreSQL refuses writes")
	waitOutage(time.Now(), 10*time.Second)
	exec("ALTER DATABASE postgres RESET default_transaction_read_only")

	requireResumed(t, r.outcome, "PostgreSQL turning writable")
	require.Eventually(t, ready(r.e, true), time.Minute, 100*time.Millisecond)
	waitCommitted(t, committedOffsets(t, r.bs, r.dlq, r.rc.Group, 2), watermarks(t, r.bs, r.dlq), time.Minute)
	rep := requireMixedConserved(t, kcfg(t), r.st, r.dlq, r.rc.Group, n)
	t.Logf("%s", rep)
}
