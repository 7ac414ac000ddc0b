package kafkaclient_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/cmd/dlq-worker/workerconfig"
	"github.com/dlqops/dlq/internal/config"
)

func writeFile(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "c.yaml")
	require.NoError(t, os.WriteFile(p, []byte(body), 0o600))
	return p
}

// kafka.extra_files takes a librdkafka property's value from a file (a Secret mounted into
// the pod), so the password is in neither the configuration file nor the environment.
func TestKafkaExtraFiles(t *testing.T) {
	dir := t.TempDir()
	pw, crlf := filepath.Join(dir, "password"), filepath.Join(dir, "crlf")
	require.NoError(t, os.WriteFile(pw, []byte("s3cr3t pw \n"), 0o600))
	require.NoError(t, os.WriteFile(crlf, []byte("other\r\n"), 0o600))
	base := "database:\n  url: x\nkafka:\n  bootstrap_servers: k\n  extra:\n    security.protocol: SASL_SSL\n    sasl.username: dlq\n"

	var w workerconfig.Config
	require.NoError(t, config.Load(writeFile(t, base+"  extra_files:\n    sasl.password: "+pw+"\n    ssl.key.password: "+crlf+"\n"), "DLQ_WORKER_", &w))
	require.Equal(t, map[string]string{"security.protocol": "SASL_SSL", "sasl.username": "dlq",
		"sasl.password": "s3cr3t pw ", "ssl.key.password": "other"}, w.Kafka.Extra,
		"one trailing newline is dropped, every other byte kept")

	var only workerconfig.Config
	require.NoError(t, config.Load(writeFile(t, "database:\n  url: x\nkafka:\n  bootstrap_servers: k\n  extra_files:\n    sasl.password: "+pw+"\n"), "DLQ_WORKER_", &only))
	require.Equal(t, map[string]string{"sasl.password": "s3cr3t pw "}, only.Kafka.Extra, "without kafka.extra")

	var both workerconfig.Config
	err := config.Load(writeFile(t, base+"    sasl.password: inline\n  extra_files:\n    sasl.password: "+pw+"\n"), "DLQ_WORKER_", &both)
	require.ErrorContains(t, err, "kafka.extra_files.sasl.password: also set in kafka.extra")

	var missing workerconfig.Config
	err = config.Load(writeFile(t, base+"  extra_files:\n    sasl.password: "+filepath.Join(dir, "nope")+"\n"), "DLQ_WORKER_", &missing)
	require.ErrorContains(t, err, "kafka.extra_files.sasl.password: open "+filepath.Join(dir, "nope"))
}
