package main

import (
	"context"
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/testenv"
)

// The whole loop, as `make demo` runs it but smaller and faster: a service whose
// downstream is down dead-letters every order, the worker re-drives them, poison orders
// are parked after max_retries, an operator replays them through the admin API once the
// bug is fixed, and every order ends up processed; the worker's audit agrees. run fails
// on any missing order or audit finding. dlq-worker and dlq-admin are the static binaries
// the container image ships, built by the same script as the Dockerfile. The demo's
// binaries listen where it says, on ports of the test's own, also when the environment
// moves `make dev`'s binaries.
func TestWholeLoopConserves(t *testing.T) {
	bs := testenv.KafkaBootstrap(t)
	devDB := testenv.DatabaseURL(t)
	before := demoRows(t, devDB)
	// A schema of its own: what the test parks stays out of the database `make dev` shows.
	t.Setenv("DATABASE_URL", testenv.Schema(t))
	bin := t.TempDir()
	out, err := exec.Command("../../scripts/build-static.sh", bin).CombinedOutput()
	require.NoError(t, err, "scripts/build-static.sh: %s", out)
	for _, name := range []string{"dlq-worker", "dlq-admin"} {
		requireStatic(t, filepath.Join(bin, name))
	}
	version, err := exec.Command(filepath.Join(bin, "dlq-worker"), "--version").CombinedOutput()
	require.NoError(t, err, "%s", version)
	require.Contains(t, string(version), "(static musl_linux_", "the image's worker links the musl librdkafka")
	version, err = exec.Command(filepath.Join(bin, "dlq-admin"), "--version").CombinedOutput()
	require.NoError(t, err, "%s", version)
	require.Regexp(t, `^dlq-admin \S+.*, go1\.\d+`, string(version))
	out, err = exec.Command("go", "build", "-o", bin+string(os.PathSeparator), "../orders-service").CombinedOutput()
	require.NoError(t, err, "go build orders-service: %s", out)
	t.Setenv("DLQ_WORKER_HTTP_LISTEN", testenv.ReserveAddr(t))
	t.Setenv("DLQ_ADMIN_HTTP_LISTEN", testenv.ReserveAddr(t))
	dir := t.TempDir()
	runID := testenv.UniqueName("t")
	err = run(options{
		orders: 600, poisonEvery: 60, downFor: 5 * time.Second, timeout: 5 * time.Minute,
		dir: dir, bin: bin, schedule: "* * * * * *", backoff: "{base: 500ms, factor: 2, cap: 2s, jitter: 0}",
		deleteTopics: true, runID: runID,
		workerAddr: testenv.ReserveAddr(t), adminAddr: testenv.ReserveAddr(t), serviceAddr: testenv.ReserveAddr(t),
	})
	if err != nil {
		for _, name := range []string{"dlq-worker", "dlq-admin", "orders-service"} {
			if log, rerr := os.ReadFile(filepath.Join(dir, name+".log")); rerr == nil {
				t.Logf("%s log (tail):\n%s", name, tail(log, 3000))
			}
		}
	}
	require.NoError(t, err)
	require.Equal(t, before, demoRows(t, devDB), "the test wrote into the dev database")
	requireTopicsGone(t, bs, "demo-orders-"+runID, "demo-orders-"+runID+".dlq")
}

// requireTopicsGone fails unless none of names is a topic of the broker (deletion reaches
// the metadata asynchronously: it waits a while).
func requireTopicsGone(t *testing.T, bootstrap string, names ...string) {
	t.Helper()
	a, err := kafka.NewAdminClient(&kafka.ConfigMap{"bootstrap.servers": bootstrap})
	require.NoError(t, err)
	defer a.Close()
	var left []string
	require.Eventually(t, func() bool {
		md, err := a.GetMetadata(nil, true, 10000)
		if err != nil {
			return false
		}
		left = left[:0]
		for _, name := range names {
			if _, ok := md.Topics[name]; ok {
				left = append(left, name)
			}
		}
		return len(left) == 0
	}, 30*time.Second, 200*time.Millisecond, "the test left topics in the dev broker: %v", left)
}

// demoRows counts the demo routes' rows in the database's default schema (none when it
// was never migrated).
func demoRows(t *testing.T, url string) int64 {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer conn.Close(ctx)
	var exists bool
	require.NoError(t, conn.QueryRow(ctx, `SELECT to_regclass('dead_letters') IS NOT NULL`).Scan(&exists))
	var n int64
	if exists {
		require.NoError(t, conn.QueryRow(ctx, `SELECT count(*) FROM dead_letters WHERE route LIKE 'demo-%'`).Scan(&n))
	}
	return n
}

// requireStatic fails unless path is an ELF executable that needs no dynamic loader and no
// shared library, so it runs on an image without a libc.
func requireStatic(t *testing.T, path string) {
	t.Helper()
	f, err := elf.Open(path)
	require.NoError(t, err)
	defer f.Close()
	for _, p := range f.Progs {
		require.NotEqual(t, elf.PT_INTERP, p.Type, "%s asks for a dynamic loader", path)
	}
	libs, err := f.ImportedLibraries()
	require.NoError(t, err)
	require.Empty(t, libs, "%s needs shared libraries", path)
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}
