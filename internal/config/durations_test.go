package config

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Retention is thought of in days and years: `90d` and `2y` are durations, in the file
// (plain or quoted, in a flow mapping too) and in the environment, and a value the parser
// refuses is still named by its key.
func TestDurationsTakeDaysAndYears(t *testing.T) {
	const day = 24 * time.Hour
	t.Setenv("DLQ_WORKER_RETENTION_RUNS", "1y")
	var w Worker
	require.NoError(t, Load(writeFile(t, "database:\n  url: x\nkafka:\n  bootstrap_servers: k\n"+
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

	var bad Worker
	err := Load(writeFile(t, "database:\n  url: x\nkafka:\n  bootstrap_servers: k\nretention:\n  audit: 2yx\n"), "DLQ_WORKER_", &bad)
	require.ErrorContains(t, err, "(key retention.audit)")
}

func TestExpandDays(t *testing.T) {
	for in, want := range map[string]string{
		"2y": "17520h", "90d": "2160h", "1y30d": "9480h", "1d12h": "24h12h", "-1d": "-24h",
		"720h": "720h", "1m": "1m", "": "", "d": "d", "2x": "2x", "1d-1h": "1d-1h",
	} {
		require.Equal(t, want, expandDays(in), in)
	}
}
