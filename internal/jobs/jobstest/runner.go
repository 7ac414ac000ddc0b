package jobstest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/jobs"
	"github.com/dlqops/dlq/internal/testenv"
)

// StartRunner starts a job runner on cfg, stopped gracefully when the test ends (a
// cleanup registered after it runs before). An empty Kafka.BootstrapServers is the test
// broker's, and a zero Poll 20 ms, so that a test waits little for its job.
func StartRunner(t testing.TB, cfg jobs.Config) *jobs.Runner {
	t.Helper()
	if cfg.Kafka.BootstrapServers == "" {
		cfg.Kafka.BootstrapServers = testenv.KafkaBootstrap(t)
	}
	if cfg.Poll == 0 {
		cfg.Poll = 20 * time.Millisecond
	}
	r, err := jobs.New(cfg)
	require.NoError(t, err)
	require.NoError(t, r.Start(context.Background()))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		require.NoError(t, r.Stop(ctx))
	})
	return r
}

// Abandon stops r with no time to finish, as a crash would: its work is abandoned where
// it is and its leases expire. Its goroutines end in the background; StartRunner's
// cleanup waits for them.
func Abandon(t testing.TB, r *jobs.Runner) {
	t.Helper()
	dead, cancel := context.WithCancel(context.Background())
	cancel()
	require.Error(t, r.Stop(dead), "no time to finish: abandoned")
}
