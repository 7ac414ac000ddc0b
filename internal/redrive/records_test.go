package redrive

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/testenv/metrictest"
)

// A partition the worker cannot route to its queue (here: no queue; a failed route)
// hands its records to the consumer's Poll, and they are redriven the same way, each
// once.
func TestUnroutedPartitionIsRedrivenThroughPoll(t *testing.T) {
	const n = 2000
	s := newStallScene(t, n, -1)
	s.w.parts.records = nil
	s.runToTheEnd(t)
	require.Equal(t, int64(n), s.targetHigh(t), "every record redriven, once")
	require.Nil(t, s.w.records.Next(0), "nothing was routed to the worker's queue")
}

// librdkafka clears a partition's route when it stops fetching it, and a revocation's
// stop can land after the next assignment routed it (here: unassigned and assigned
// again behind the worker's back after a run read it); its records then wait in the
// partition's own queue, which nobody reads. The next run routes each partition as it
// resumes it, so it reads them all without a fetch-stall kick.
func TestRunReadsAPartitionWhoseRouteLibrdkafkaCleared(t *testing.T) {
	const n = 500
	s := newStallScene(t, n, -1)
	s.runToTheEnd(t)
	require.Equal(t, int64(n), s.targetHigh(t))
	require.NoError(t, s.w.consumer.Unassign())
	require.NoError(t, s.w.consumer.Assign(s.tps))
	s.addRecords(t, n)
	s.runToTheEnd(t)
	require.Equal(t, int64(2*n), s.targetHigh(t), "every record redriven, once")
	reg := prometheus.NewRegistry()
	reg.MustRegister(s.w.metrics.errors)
	require.Equal(t, 0.0, metrictest.Sum(t, reg, "dlq_worker_errors_total", map[string]string{"route": s.rc.Name, "kind": "fetch_stall"}), "kicks")
}

// runToTheEnd starts a run and steps the loop until it ends, failing t if it does not
// succeed within a minute.
func (s *stallScene) runToTheEnd(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	reply := make(chan error, 1)
	s.w.startRun(ctx, reply)
	require.NotNil(t, s.w.run, "the run started")
	deadline := time.Now().Add(time.Minute)
	for {
		select {
		case err := <-reply:
			require.NoError(t, err)
			return
		default:
			require.True(t, time.Now().Before(deadline), "the run never ended")
			s.w.step(ctx)
		}
	}
}
