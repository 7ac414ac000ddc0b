package jobs_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/jobs"
	"github.com/dlqops/dlq/internal/jobs/jobstest"
	"github.com/dlqops/dlq/internal/store/storetest"
	"github.com/dlqops/dlq/internal/testenv"
	"github.com/dlqops/dlq/internal/testenv/metrictest"
)

// While PostgreSQL is down, every job slot keeps trying to claim a job at its poll
// interval; each failure is counted, and the log gets one "claim job" warning per 10 s,
// not one per slot and attempt.
func TestClaimFailuresAreLoggedOncePerInterval(t *testing.T) {
	t.Parallel()
	st, pg := storetest.NewPrivate(t)
	var logs testenv.SyncBuffer
	reg := prometheus.NewRegistry()
	jobstest.StartRunner(t, jobs.Config{Store: st, Routes: jobstest.Routes("orders"), Owner: "w1", Registerer: reg,
		Log: zerolog.New(zerolog.MultiLevelWriter(&logs, zerolog.NewTestWriter(t)))})

	pg.Stop()
	// Five slots polling every 20 ms: a hundred failed claims take well under the 10 s.
	require.Eventually(t, func() bool { return metrictest.Sum(t, reg, "dlq_job_claim_errors_total", nil) >= 100 },
		time.Minute, 20*time.Millisecond, "the slots keep trying")
	var claims []map[string]any
	for _, s := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var l map[string]any
		require.NoError(t, json.Unmarshal([]byte(s), &l), s)
		if l["message"] == "claim job" {
			claims = append(claims, l)
		}
	}
	require.Len(t, claims, 1, "one warning per interval")
	require.Equal(t, "warn", claims[0]["level"])
	require.NotEmpty(t, claims[0]["error"])
	pg.Start() // the runner's Stop hands nothing back to a server that is down
}
