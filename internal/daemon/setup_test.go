package daemon_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/cmd/dlq-worker/workerconfig"
	"github.com/dlqops/dlq/internal/daemon"
)

// DATABASE_URL and KAFKA_BOOTSTRAP_SERVERS seed the connection settings; the file, then
// the binary's prefixed variables, override them.
func TestConventionalVariablesSeedTheConnections(t *testing.T) {
	t.Setenv("DATABASE_URL", "postgres://seed")
	t.Setenv("KAFKA_BOOTSTRAP_SERVERS", "seed:9092")
	load := func(file string) *workerconfig.Config {
		t.Helper()
		path := filepath.Join(t.TempDir(), "worker.yaml")
		require.NoError(t, os.WriteFile(path, []byte(file), 0o600))
		var w workerconfig.Config
		require.NoError(t, daemon.LoadConfig(path, "DLQ_WORKER_", &w, &w.Database, &w.Kafka.BootstrapServers))
		return &w
	}
	w := load("database:\n  max_conns: 3\n")
	require.Equal(t, "postgres://seed", w.Database.URL, "seeded: the file's database mapping has no url")
	require.Equal(t, "seed:9092", w.Kafka.BootstrapServers)

	w = load("database:\n  url: postgres://file\nkafka:\n  bootstrap_servers: file:9092\n")
	require.Equal(t, "postgres://file", w.Database.URL, "the file overrides the seed")
	require.Equal(t, "file:9092", w.Kafka.BootstrapServers)

	t.Setenv("DLQ_WORKER_DATABASE_URL", "postgres://prefixed")
	t.Setenv("DLQ_WORKER_KAFKA_BOOTSTRAP_SERVERS", "prefixed:9092")
	w = load("database:\n  url: postgres://file\nkafka:\n  bootstrap_servers: file:9092\n")
	require.Equal(t, "postgres://prefixed", w.Database.URL, "the prefixed variable overrides the file")
	require.Equal(t, "prefixed:9092", w.Kafka.BootstrapServers)
}
