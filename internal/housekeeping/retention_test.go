package housekeeping_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/cmd/dlq-worker/workerconfig"
	"github.com/dlqops/dlq/internal/config"
	"github.com/dlqops/dlq/internal/housekeeping"
)

func writeFile(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "c.yaml")
	require.NoError(t, os.WriteFile(p, []byte(body), 0o600))
	return p
}

func TestRetention(t *testing.T) {
	var w workerconfig.Config
	require.NoError(t, config.Load(writeFile(t, "database:\n  url: x\nkafka:\n  bootstrap_servers: k\nretention:\n  records: 48h\n  ledger: 720h\n"), "DLQ_WORKER_", &w))
	require.Equal(t, housekeeping.Retention{Records: 48 * time.Hour, Runs: housekeeping.DefaultRetainRuns, IdleRuns: housekeeping.DefaultRetainIdleRuns,
		Jobs: housekeeping.DefaultRetainJobs, Audit: housekeeping.DefaultRetainAudit, Ledger: 720 * time.Hour, Interval: housekeeping.DefaultHousekeeping}, w.Retention)

	t.Setenv("DLQ_WORKER_RETENTION_AUDIT", "10s")
	t.Setenv("DLQ_WORKER_RETENTION_LEDGER", "30s")
	err := config.Load(writeFile(t, "database:\n  url: x\nretention:\n  idle_runs: -1h\n"), "DLQ_WORKER_", &w)
	require.ErrorContains(t, err, "retention.idle_runs: must be at least 1m0s, got -1h0m0s")
	require.ErrorContains(t, err, "retention.audit: must be at least 1m0s, got 10s")
	require.ErrorContains(t, err, "retention.ledger: must be at least 48h0m0s, got 30s")
}
