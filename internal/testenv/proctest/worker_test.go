package proctest_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/cmd/dlq-worker/workerconfig"
	"github.com/dlqops/dlq/internal/config"
	"github.com/dlqops/dlq/internal/testenv/proctest"
)

// The written configuration is one dlq-worker accepts, with the values given and the
// defaults said.
func TestWorkerConfig(t *testing.T) {
	c := proctest.WorkerConfig{DatabaseURL: "postgres://u@127.0.0.1/db", Bootstrap: "127.0.0.1:9092",
		Route: "orders", Topic: "orders.dlq", RateLimit: 400}
	var w workerconfig.Config
	require.NoError(t, config.Load(c.Write(t, t.TempDir()), "PROCTEST_UNSET_", &w))
	require.Equal(t, c.DatabaseURL, w.Database.URL)
	require.Equal(t, c.Bootstrap, w.Kafka.BootstrapServers)
	require.Equal(t, "6000", w.Kafka.Consumer["session.timeout.ms"])
	require.Empty(t, w.GroupInstanceID)
	require.Len(t, w.Routes, 1)
	r := w.Routes[0]
	require.Equal(t, "orders", r.Name)
	require.Equal(t, []string{"orders.dlq"}, r.Topics)
	require.Equal(t, 1, r.MaxInFlight)
	require.InDelta(t, 400, r.RateLimit, 0)

	c.Session, c.GroupInstance, c.MaxInFlight = 10*time.Second, "off", 1000
	w = workerconfig.Config{}
	require.NoError(t, config.Load(c.Write(t, t.TempDir()), "PROCTEST_UNSET_", &w))
	require.Equal(t, "10000", w.Kafka.Consumer["session.timeout.ms"])
	require.Equal(t, "off", w.GroupInstanceID)
	require.Equal(t, 1000, w.Routes[0].MaxInFlight)
}
