package daemon_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/dlqops/dlq/internal/daemon"
	"github.com/dlqops/dlq/internal/ops"
	"github.com/dlqops/dlq/internal/store"
	"github.com/dlqops/dlq/internal/testenv"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The migrations apply (twice is a no-op), the pool round-trips bytes through a real
// table, and readiness follows the database.
func TestMigrateAndPoolRoundTrip(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := store.Config{URL: testenv.Schema(t), MigrateOnStart: true, MaxConns: 2}
	for range 2 {
		require.NoError(t, daemon.MigrateOnStart(ctx, db, zerolog.Nop()))
	}
	srv := ops.New(zerolog.Nop())
	pool, err := daemon.OpenPool(ctx, db, srv, zerolog.Nop())
	require.NoError(t, err)
	defer pool.Close()
	require.Empty(t, srv.Ready(ctx))

	var applied int
	require.NoError(t, pool.QueryRow(ctx, "SELECT count(*) FROM goose_db_version WHERE version_id > 0").Scan(&applied))
	require.Positive(t, applied)

	_, err = pool.Exec(ctx, "CREATE TABLE smoke (k bytea, v bytea)")
	require.NoError(t, err)
	_, err = pool.Exec(ctx, "INSERT INTO smoke VALUES ($1, $2), ($3, $4)", []byte{0, 0xff}, nil, []byte{}, []byte("v"))
	require.NoError(t, err)
	rows, err := pool.Query(ctx, "SELECT k, v FROM smoke ORDER BY length(k) DESC")
	require.NoError(t, err)
	got, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) ([2][]byte, error) {
		var kv [2][]byte
		return kv, r.Scan(&kv[0], &kv[1])
	})
	require.NoError(t, err)
	require.Equal(t, []byte{0, 0xff}, got[0][0])
	require.Nil(t, got[0][1], "NULL stays NULL")
	require.NotNil(t, got[1][0], "empty stays empty, not NULL")
	require.Empty(t, got[1][0])
}

type recorder struct {
	name string
	log  *[]string
	fail bool
}

func (r recorder) Start(context.Context) error {
	*r.log = append(*r.log, "start "+r.name)
	if r.fail {
		return io.ErrUnexpectedEOF
	}
	return nil
}

func (r recorder) Stop(context.Context) error {
	*r.log = append(*r.log, "stop "+r.name)
	return nil
}

// Run serves the ops endpoints, stops components in reverse order when its context ends,
// and stops the ones already started when a later one fails to start.
func TestRunLifecycle(t *testing.T) {
	t.Parallel()
	var log []string
	srv := ops.New(zerolog.Nop())
	srv.AddCheck("dep", func(context.Context) error { return nil })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- daemon.Run(ctx, zerolog.Nop(), srv, ops.Listen{Addr: "127.0.0.1:0"}, time.Second, recorder{"a", &log, false}, recorder{"b", &log, false})
	}()
	var status map[string]any
	require.Eventually(t, func() bool {
		if srv.Addr() == "" {
			return false
		}
		resp, err := http.Get("http://" + srv.Addr() + "/readyz")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		return resp.StatusCode == http.StatusOK && json.NewDecoder(resp.Body).Decode(&status) == nil
	}, 10*time.Second, 20*time.Millisecond)
	require.Equal(t, "ready", status["status"])
	cancel()
	require.NoError(t, <-done)
	require.Equal(t, []string{"start a", "start b", "stop b", "stop a"}, log)

	log = nil
	err := daemon.Run(context.Background(), zerolog.Nop(), ops.New(zerolog.Nop()), ops.Listen{Addr: "127.0.0.1:0"}, time.Second,
		recorder{"a", &log, false}, recorder{"b", &log, true}, recorder{"c", &log, false})
	require.ErrorIs(t, err, io.ErrUnexpectedEOF)
	require.Equal(t, []string{"start a", "start b", "stop a"}, log)
}

// database.statement_timeout reaches every connection of the pool.
func TestPoolStatementTimeout(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := store.Config{URL: testenv.Schema(t), MaxConns: 1, StatementTimeout: 1500 * time.Millisecond}
	pool, err := daemon.OpenPool(ctx, db, ops.New(zerolog.Nop()), zerolog.Nop())
	require.NoError(t, err)
	defer pool.Close()
	var got string
	require.NoError(t, pool.QueryRow(ctx, "SHOW statement_timeout").Scan(&got))
	require.Equal(t, "1500ms", got)
	_, err = pool.Exec(ctx, "SELECT pg_sleep(10)")
	require.ErrorContains(t, err, "statement timeout")
}
