package soak_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/jackc/pgx/v5"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/deadletter"
	"github.com/dlqops/dlq/internal/testenv"
	"github.com/dlqops/dlq/internal/testenv/kafkatest"
)

// downstreamFlood: 2,000 dead letters whose service is down (it dead-letters every
// redriven record again through the deadletter package), a route with backoff none,
// max_retries 1000 and a 2 s schedule, the default breaker. Over 60 s the worker may
// produce at most 1.5 backlogs to the source and its breaker must open; then the service
// recovers and the backlog drains with no operator. The duplicates are the hops the
// outage cost (each failed redrive is one more copy on the source).
func downstreamFlood(t *testing.T, s *soak, r *row) {
	const records, partitions = 2000, 2
	rt := s.route(t, "flood-", partitions)
	s.seed(t, rt.dlq, rt.target, "f", records, partitions, false)
	var down atomic.Bool
	down.Store(true)
	var mu sync.Mutex
	handled := map[string]bool{}
	pub, err := deadletter.NewPublisher(deadletter.PublisherConfig{BootstrapServers: s.bootstrap(), Topic: rt.dlq})
	require.NoError(t, err)
	defer pub.Close(10 * time.Second)
	outage := errors.New("downstream unavailable")
	svc, err := deadletter.NewConsumer(deadletter.ConsumerConfig{BootstrapServers: s.bootstrap(), Group: testenv.UniqueName("svc-"),
		Topics: []string{rt.target}, Log: zerolog.Nop()}, pub, func(_ context.Context, m *kafka.Message) error {
		if down.Load() {
			return outage
		}
		mu.Lock()
		handled[string(m.Key)] = true
		mu.Unlock()
		return nil
	})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- svc.Run(ctx) }()
	defer func() {
		cancel()
		require.NoError(t, <-done)
	}()

	o := rt.opts()
	o.Schedule, o.MaxRetries = "@every 2s", 1000
	cfg := s.workerConfig(t, o)
	logPath := filepath.Join(s.logDir(t), "worker.log")
	targetEnd := s.watermarks(t, rt.target)
	before := kafkatest.Total(targetEnd())
	w := s.superviseWorker(t, cfg, logPath)
	time.Sleep(60 * time.Second) // the scenario's span: the outage as the schedule meets it
	produced := kafkatest.Total(targetEnd()) - before
	opened := auditCount(t, rt.db, rt.name, "breaker_open")
	down.Store(false) // the service recovers
	recovered := time.Now()
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(handled) == records && scheduledCount(t, rt.db, rt.dlq) == 0
	}, 5*time.Minute, 500*time.Millisecond, "the backlog did not drain after the recovery; log in %s", logPath)
	drained := time.Since(recovered)
	s.waitDrained(t, rt.dlq, rt.group, partitions, 5*time.Minute)
	require.NoError(t, w.term(), "log in %s", logPath)
	s.judge(t, r, cfg, rt.dlq, rt.group, rt.target, rt.db, keys("f", records), 0)
	r.note = fmt.Sprintf("%d produced to the source in 60 s (%.2f× the backlog), breaker opened %d×; drained %s after the recovery",
		produced, float64(produced)/records, opened, drained.Round(time.Second)) + w.note()
	if produced > records*3/2 || opened == 0 {
		r.verdict, r.ok = "FAIL: the outage was amplified", false
	}
}

// auditCount counts the audit rows of route with action.
func auditCount(t *testing.T, dbURL, route, action string) int {
	t.Helper()
	return queryCount(t, dbURL, `SELECT count(*) FROM audit_log WHERE route = $1 AND action = $2`, route, action)
}

// scheduledCount counts the DLQ's records waiting as scheduled.
func scheduledCount(t *testing.T, dbURL, dlq string) int {
	t.Helper()
	return queryCount(t, dbURL, `SELECT count(*) FROM dead_letters WHERE dlq_topic = $1 AND status = 'scheduled'`, dlq)
}

func queryCount(t *testing.T, dbURL, sql string, args ...any) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dbURL)
	require.NoError(t, err)
	defer conn.Close(context.Background())
	var n int
	require.NoError(t, conn.QueryRow(ctx, sql, args...).Scan(&n))
	return n
}
