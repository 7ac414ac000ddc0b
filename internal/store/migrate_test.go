package store_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/store"
	"github.com/dlqops/dlq/internal/testenv"
	"github.com/dlqops/dlq/migrations"
)

func TestConcurrentMigrationsApplyOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := testenv.Schema(t)

	before, err := store.MigrationStatus(ctx, url)
	require.NoError(t, err)
	require.NotEmpty(t, before)
	for _, m := range before {
		require.False(t, m.Applied, m.Name)
	}

	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Go(func() { errs[i] = store.Migrate(ctx, url) })
	}
	wg.Wait()
	require.NoError(t, errors.Join(errs...))

	after, err := store.MigrationStatus(ctx, url)
	require.NoError(t, err)
	require.Len(t, after, len(before))
	for _, m := range after {
		require.True(t, m.Applied, m.Name)
	}
	conn, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer conn.Close(ctx)
	var applied int
	require.NoError(t, conn.QueryRow(ctx, "SELECT count(*) FROM goose_db_version WHERE version_id > 0").Scan(&applied))
	require.Equal(t, len(before), applied, "each migration recorded once")
}

// A migration whose number is below one already applied (numbers are assigned ahead of
// time, so 00004 may land after 00005) is applied, not refused.
func TestLowerMigrationLandedLaterIsApplied(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := testenv.Schema(t)
	require.NoError(t, store.Migrate(ctx, url))
	cfg, err := pgx.ParseConfig(url)
	require.NoError(t, err)
	db := stdlib.OpenDB(*cfg)
	defer db.Close()
	p, err := goose.NewProvider(goose.DialectPostgres, db, migrations.FS, goose.WithDisableGlobalRegistry(true))
	require.NoError(t, err)
	const lower = 4 // 00004_ledger_positions landed after 00005_admin_scopes
	_, err = p.ApplyVersion(ctx, lower, false)
	require.NoError(t, err)

	require.NoError(t, store.Migrate(ctx, url))
	status, err := store.MigrationStatus(ctx, url)
	require.NoError(t, err)
	for _, m := range status {
		require.True(t, m.Applied, m.Name)
	}
	var n int
	require.NoError(t, db.QueryRowContext(ctx, "SELECT count(*) FROM ledger_positions").Scan(&n))
}
