package workerconfig

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/config"
	"github.com/dlqops/dlq/internal/redrive"
)

func writeFile(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "c.yaml")
	require.NoError(t, os.WriteFile(p, []byte(body), 0o600))
	return p
}

func TestLoadFileEnvDefaults(t *testing.T) {
	p := writeFile(t, "log:\n  level: debug\ndatabase:\n  url: postgres://file\nkafka:\n  bootstrap_servers: 127.0.0.1:1\n")
	t.Setenv("DLQ_WORKER_KAFKA_BOOTSTRAP_SERVERS", "127.0.0.1:2")
	var w Config
	require.NoError(t, config.Load(p, "DLQ_WORKER_", &w))
	require.Equal(t, "debug", w.Log.Level)
	require.Equal(t, "postgres://file", w.Database.URL)
	require.Equal(t, "127.0.0.1:2", w.Kafka.BootstrapServers, "environment overrides the file")
	require.Equal(t, "127.0.0.1:9464", w.HTTP.Listen)
	require.Equal(t, 30*time.Second, w.ShutdownGrace)
	require.Equal(t, redrive.ReadPathQueue, w.ReadPath)
}

// read_path is queue or poll, from the file or DLQ_WORKER_READ_PATH.
func TestReadPath(t *testing.T) {
	p := writeFile(t, "database:\n  url: postgres://file\nkafka:\n  bootstrap_servers: 127.0.0.1:1\nread_path: poll\n")
	var w Config
	require.NoError(t, config.Load(p, "DLQ_WORKER_", &w))
	require.Equal(t, redrive.ReadPathPoll, w.ReadPath)
	t.Setenv("DLQ_WORKER_READ_PATH", "queue")
	w = Config{}
	require.NoError(t, config.Load(p, "DLQ_WORKER_", &w))
	require.Equal(t, redrive.ReadPathQueue, w.ReadPath, "environment overrides the file")
}

func TestLoadRejects(t *testing.T) {
	for name, tc := range map[string]struct {
		file, env, want string
	}{
		"unknown key":        {file: "database:\n  url: x\n  ulr: y\n", want: "field ulr not found"},
		"bad level":          {file: "log:\n  level: loud\n", want: "log.level"},
		"silenced logs":      {file: "log:\n  level: disabled\n", want: "log.level"},
		"fatal only":         {file: "log:\n  level: fatal\n", want: "log.level"},
		"numeric level":      {file: "log:\n  level: 7\n", want: "log.level"},
		"upper-case level":   {file: "log:\n  level: INFO\n", want: "log.level"},
		"missing database":   {file: "kafka:\n  bootstrap_servers: x\n", want: "database.url"},
		"bad listen":         {file: "http:\n  listen: nowhere\n", want: "http.listen"},
		"bad env duration":   {env: "soon", want: "SHUTDOWN_GRACE"},
		"negative grace":     {file: "shutdown_grace: -1s\n", want: "shutdown_grace"},
		"tiny memory limit":  {file: "memory_limit_mib: 8\n", want: "memory_limit_mib"},
		"no job slot":        {file: "jobs:\n  concurrency: -1\n", want: "jobs.concurrency"},
		"bad instance id":    {file: "group_instance_id: pod 1\n", want: "group_instance_id"},
		"unknown read path":  {file: "read_path: fetch\n", want: "read_path"},
		"wrong type in file": {file: "database:\n  max_conns: many\n", want: "max_conns"},
		"bad not_retryable":  {file: "routes:\n  - name: r\n    topics: [orders.dlq]\n    not_retryable: [Timeout, \"^((\"]\n", want: `routes[r].not_retryable: pattern "^(("`},
	} {
		t.Run(name, func(t *testing.T) {
			if tc.env != "" {
				t.Setenv("DLQ_WORKER_SHUTDOWN_GRACE", tc.env)
			}
			var w Config
			err := config.Load(writeFile(t, tc.file), "DLQ_WORKER_", &w)
			require.ErrorContains(t, err, tc.want)
		})
	}
}

// A type error names the key that holds the bad value, also inside a flow mapping (all keys
// on one line) and inside a list of named items.
func TestLoadTypeErrorNamesTheKey(t *testing.T) {
	for name, tc := range map[string]struct{ file, want string }{
		"flow mapping": {
			file: "database:\n  url: x\nroutes:\n  - name: orders\n    topics: [orders.dlq]\n    backoff: {base: 30, factor: 2, cap: 1h, jitter: 0.2}\n",
			want: "(key routes[orders].backoff.base)",
		},
		"block mapping": {
			file: "database:\n  url: x\nroutes:\n  - name: a\n    topics: [a.dlq]\n  - name: b\n    topics: [b.dlq]\n    backoff:\n      base: 1s\n      cap: forever\n",
			want: "(key routes[b].backoff.cap)",
		},
		"unnamed item": {
			file: "database:\n  url: x\nroutes:\n  - topics: [a.dlq]\n    max_retries: lots\n",
			want: "(key routes[0].max_retries)",
		},
	} {
		t.Run(name, func(t *testing.T) {
			var w Config
			err := config.Load(writeFile(t, tc.file), "DLQ_WORKER_", &w)
			require.ErrorContains(t, err, tc.want)
		})
	}
}

// Retention is thought of in days and years: `90d` and `2y` are durations, in the file
// (plain or quoted, in a flow mapping too) and in the environment, and a value the parser
// refuses is still named by its key.
func TestDurationsTakeDaysAndYears(t *testing.T) {
	const day = 24 * time.Hour
	t.Setenv("DLQ_WORKER_RETENTION_RUNS", "1y")
	var w Config
	require.NoError(t, config.Load(writeFile(t, "database:\n  url: x\nkafka:\n  bootstrap_servers: k\n"+
		"retention:\n  records: 90d\n  audit: 2y\n  jobs: \"1d12h\"\n  ledger: '400d'\n  idle_runs: 36h\n"+
		"routes:\n  - name: r\n    topics: [r.dlq]\n    backoff: {base: 1d, cap: 7d}\n"), "DLQ_WORKER_", &w))
	require.Equal(t, 90*day, w.Retention.Records)
	require.Equal(t, 2*365*day, w.Retention.Audit)
	require.Equal(t, 36*time.Hour, w.Retention.Jobs)
	require.Equal(t, 400*day, w.Retention.Ledger)
	require.Equal(t, 36*time.Hour, w.Retention.IdleRuns, "Go durations read as before")
	require.Equal(t, 365*day, w.Retention.Runs, "from the environment")
	require.Equal(t, day, w.Routes[0].Backoff.Base)
	require.Equal(t, 7*day, w.Routes[0].Backoff.Cap)

	var bad Config
	err := config.Load(writeFile(t, "database:\n  url: x\nkafka:\n  bootstrap_servers: k\nretention:\n  audit: 2yx\n"), "DLQ_WORKER_", &bad)
	require.ErrorContains(t, err, "(key retention.audit)")
}
