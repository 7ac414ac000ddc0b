package redrive

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/testenv/metrictest"
)

// A partition the worker cannot route to its queue (here: no queue; a failed route)
// hands its records to the consumer's Poll, and they are redriven the same way, each
// once. (On read_path poll the worker has no queue: every partition is read so.)
func TestUnroutedPartitionIsRedrivenThroughPoll(t *testing.T) {
	const n = 2000
	s := newStallScene(t, n, -1)
	s.w.parts.records = nil
	s.runToTheEnd(t)
	require.Equal(t, int64(n), s.targetHigh(t), "every record redriven, once")
	if s.w.records != nil {
		require.Nil(t, s.w.records.Next(0), "nothing was routed to the worker's queue")
	}
}

// librdkafka clears a partition's route when it stops fetching it, and a revocation's
// stop can land after the next assignment routed it (here: unassigned and assigned
// again behind the worker's back after a run read it); its records then wait in the
// partition's own queue, which nobody reads. The next run routes each partition as it
// resumes it, so it reads them all without a fetch-stall kick.
func TestRunReadsAPartitionWhoseRouteLibrdkafkaCleared(t *testing.T) {
	s := newStallScene(t, 500, -1)
	s.runTwiceAround(t, 500, func() {
		require.NoError(t, s.w.consumer.Unassign())
		require.NoError(t, s.w.consumer.Assign(s.tps))
	})
	require.Equal(t, 0.0, s.errorsOf(t, "fetch_stall"), "kicks")
}

// A run resumes each partition at the next offset the worker expects, whatever
// librdkafka's own position says: under load librdkafka handed out a partition's first
// record again in the run after an operator paused one that had read it
// (TestOperatorControls: "tracker: offset 0 added after 614"). Here its position is
// moved back behind the worker's back between two runs: the second run reads only the
// new records, and none is handed out again.
func TestResumeFetchesFromTheNextOffsetTheWorkerExpects(t *testing.T) {
	s := newStallScene(t, 500, -1)
	s.runTwiceAround(t, 500, func() {
		require.NoError(t, s.w.consumer.Seek(kafka.TopicPartition{Topic: &s.dlq, Partition: 0, Offset: 0}, 0))
	})
	require.Equal(t, 0.0, s.errorsOf(t, "read_again"), "records handed out again")
}

// A record the consumer hands out below the next offset the run expects (its position
// moved back while the run reads; here behind the worker's back) is one this life
// already took: it is skipped, counted and logged, and the partition fetches on from the
// next offset. Every record is redriven once; the worker panicked ("tracker: offset 0
// added after …") before.
func TestRunSkipsRecordsTheConsumerHandsOutAgain(t *testing.T) {
	const n = 2000
	s := newStallScene(t, n, -1)
	p := s.w.parts.byKey[partKey{s.dlq, 0}]
	p.window = n // the slow start would hold the partition back now and then (a long hold pauses it)
	ctx := context.Background()
	reply := make(chan error, 1)
	s.w.runner.startRun(ctx, reply)
	deadline := time.Now().Add(time.Minute)
	for p.trk == nil || p.trk.Next() < n/4 || p.paused {
		require.True(t, time.Now().Before(deadline), "the run never read a quarter of the partition")
		s.w.step(ctx)
	}
	require.NoError(t, s.w.consumer.Seek(kafka.TopicPartition{Topic: &s.dlq, Partition: 0, Offset: 0}, 0))
	s.stepToTheEnd(t, reply)
	require.Equal(t, int64(n), s.targetHigh(t), "every record redriven, once")
	require.Positive(t, s.errorsOf(t, "read_again"))
	var skipped map[string]any
	for line := range bytes.Lines(s.logged.Bytes()) {
		if bytes.Contains(line, []byte("the consumer handed out a record this worker already took")) {
			require.NoError(t, json.Unmarshal(line, &skipped))
			break
		}
	}
	require.NotNil(t, skipped, "a WARN line")
	require.Equal(t, "warn", skipped["level"])
	require.Equal(t, []any{s.dlq, 0.0, 0.0}, []any{skipped["topic"], skipped["partition"], skipped["offset"]})
	require.GreaterOrEqual(t, skipped["next_offset"], float64(n/4))
}

// runTwiceAround runs the scene's n records to the end, calls between (something done
// behind the worker's back), adds n records and runs again, requiring each run to redrive
// its records once.
func (s *stallScene) runTwiceAround(t *testing.T, n int, between func()) {
	t.Helper()
	s.runToTheEnd(t)
	require.Equal(t, int64(n), s.targetHigh(t))
	between()
	s.addRecords(t, n)
	s.runToTheEnd(t)
	require.Equal(t, int64(2*n), s.targetHigh(t), "every record redriven, once")
}

// errorsOf is the scene's route's dlq_worker_errors_total of kind.
func (s *stallScene) errorsOf(t *testing.T, kind string) float64 {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(s.w.metrics.errors)
	return metrictest.Sum(t, reg, "dlq_worker_errors_total", map[string]string{"route": s.rc.Name, "kind": kind})
}

// runToTheEnd starts a run and steps the loop until it ends, failing t if it does not
// succeed within a minute.
func (s *stallScene) runToTheEnd(t *testing.T) {
	t.Helper()
	reply := make(chan error, 1)
	s.w.runner.startRun(context.Background(), reply)
	require.NotNil(t, s.w.run, "the run started")
	s.stepToTheEnd(t, reply)
}

// stepToTheEnd steps the loop until the run started with reply ends, failing t if it does
// not succeed within a minute.
func (s *stallScene) stepToTheEnd(t *testing.T, reply chan error) {
	t.Helper()
	ctx := context.Background()
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
