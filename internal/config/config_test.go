package config

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
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
	var w Worker
	require.NoError(t, Load(p, "DLQ_WORKER_", &w))
	require.Equal(t, "debug", w.Log.Level)
	require.Equal(t, "postgres://file", w.Database.URL)
	require.Equal(t, "127.0.0.1:2", w.Kafka.BootstrapServers, "environment overrides the file")
	require.Equal(t, "127.0.0.1:9464", w.HTTP.Listen)
	require.Equal(t, 30*time.Second, w.ShutdownGrace)
	require.Equal(t, ReadPathQueue, w.ReadPath)
}

// read_path is queue or poll, from the file or DLQ_WORKER_READ_PATH.
func TestReadPath(t *testing.T) {
	p := writeFile(t, "database:\n  url: postgres://file\nkafka:\n  bootstrap_servers: 127.0.0.1:1\nread_path: poll\n")
	var w Worker
	require.NoError(t, Load(p, "DLQ_WORKER_", &w))
	require.Equal(t, ReadPathPoll, w.ReadPath)
	t.Setenv("DLQ_WORKER_READ_PATH", "queue")
	w = Worker{}
	require.NoError(t, Load(p, "DLQ_WORKER_", &w))
	require.Equal(t, ReadPathQueue, w.ReadPath, "environment overrides the file")
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
	} {
		t.Run(name, func(t *testing.T) {
			if tc.env != "" {
				t.Setenv("DLQ_WORKER_SHUTDOWN_GRACE", tc.env)
			}
			var w Worker
			err := Load(writeFile(t, tc.file), "DLQ_WORKER_", &w)
			require.ErrorContains(t, err, tc.want)
		})
	}
}

func TestLoadMissingFile(t *testing.T) {
	var a Admin
	require.ErrorContains(t, Load(filepath.Join(t.TempDir(), "nope.yaml"), "DLQ_ADMIN_", &a), "no such file")
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
			var w Worker
			err := Load(writeFile(t, tc.file), "DLQ_WORKER_", &w)
			require.ErrorContains(t, err, tc.want)
		})
	}
}

func TestRetention(t *testing.T) {
	var w Worker
	require.NoError(t, Load(writeFile(t, "database:\n  url: x\nkafka:\n  bootstrap_servers: k\nretention:\n  records: 48h\n  ledger: 720h\n"), "DLQ_WORKER_", &w))
	require.Equal(t, Retention{Records: 48 * time.Hour, Runs: DefaultRetainRuns, IdleRuns: DefaultRetainIdleRuns,
		Jobs: DefaultRetainJobs, Audit: DefaultRetainAudit, Ledger: 720 * time.Hour, Interval: DefaultHousekeeping}, w.Retention)

	t.Setenv("DLQ_WORKER_RETENTION_AUDIT", "10s")
	t.Setenv("DLQ_WORKER_RETENTION_LEDGER", "30s")
	err := Load(writeFile(t, "database:\n  url: x\nretention:\n  idle_runs: -1h\n"), "DLQ_WORKER_", &w)
	require.ErrorContains(t, err, "retention.idle_runs: must be at least 1m0s, got -1h0m0s")
	require.ErrorContains(t, err, "retention.audit: must be at least 1m0s, got 10s")
	require.ErrorContains(t, err, "retention.ledger: must be at least 48h0m0s, got 30s")
}

// kafka.extra_files takes a librdkafka property's value from a file (a Secret mounted into
// the pod), so the password is in neither the configuration file nor the environment.
func TestKafkaExtraFiles(t *testing.T) {
	dir := t.TempDir()
	pw, crlf := filepath.Join(dir, "password"), filepath.Join(dir, "crlf")
	require.NoError(t, os.WriteFile(pw, []byte("s3cr3t pw \n"), 0o600))
	require.NoError(t, os.WriteFile(crlf, []byte("other\r\n"), 0o600))
	base := "database:\n  url: x\nkafka:\n  bootstrap_servers: k\n  extra:\n    security.protocol: SASL_SSL\n    sasl.username: dlq\n"

	var w Worker
	require.NoError(t, Load(writeFile(t, base+"  extra_files:\n    sasl.password: "+pw+"\n    ssl.key.password: "+crlf+"\n"), "DLQ_WORKER_", &w))
	require.Equal(t, map[string]string{"security.protocol": "SASL_SSL", "sasl.username": "dlq",
		"sasl.password": "s3cr3t pw ", "ssl.key.password": "other"}, w.Kafka.Extra,
		"one trailing newline is dropped, every other byte kept")

	var only Worker
	require.NoError(t, Load(writeFile(t, "database:\n  url: x\nkafka:\n  bootstrap_servers: k\n  extra_files:\n    sasl.password: "+pw+"\n"), "DLQ_WORKER_", &only))
	require.Equal(t, map[string]string{"sasl.password": "s3cr3t pw "}, only.Kafka.Extra, "without kafka.extra")

	var both Worker
	err := Load(writeFile(t, base+"    sasl.password: inline\n  extra_files:\n    sasl.password: "+pw+"\n"), "DLQ_WORKER_", &both)
	require.ErrorContains(t, err, "kafka.extra_files.sasl.password: also set in kafka.extra")

	var missing Worker
	err = Load(writeFile(t, base+"  extra_files:\n    sasl.password: "+filepath.Join(dir, "nope")+"\n"), "DLQ_WORKER_", &missing)
	require.ErrorContains(t, err, "kafka.extra_files.sasl.password: open "+filepath.Join(dir, "nope"))
}
