package store_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/store"
	"github.com/dlqops/dlq/internal/testenv"
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
