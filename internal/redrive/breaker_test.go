package redrive_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/deadletter"
	"github.com/dlqops/dlq/internal/redrive"
	"github.com/dlqops/dlq/internal/routes"
	"github.com/dlqops/dlq/internal/store"
	"github.com/dlqops/dlq/internal/store/storetest"
	"github.com/dlqops/dlq/internal/testenv"
	"github.com/dlqops/dlq/internal/testenv/kafkatest"
)

// outageService is a service of topic whose downstream is down until recovered: while
// down it dead-letters every record through the public deadletter package; once up it
// handles each, and counts the keys it handled.
type outageService struct {
	down    atomic.Bool
	mu      sync.Mutex
	handled map[string]bool
}

func runOutageService(t *testing.T, bootstrap, topic, dlq string) *outageService {
	t.Helper()
	s := &outageService{handled: map[string]bool{}}
	s.down.Store(true)
	pub, err := deadletter.NewPublisher(deadletter.PublisherConfig{BootstrapServers: bootstrap, Topic: dlq})
	require.NoError(t, err)
	outage := errors.New("service B: downstream unavailable")
	svc, err := deadletter.NewConsumer(deadletter.ConsumerConfig{BootstrapServers: bootstrap, Group: testenv.UniqueName("svc-"),
		Topics: []string{topic}, Log: zerolog.Nop()}, pub, func(_ context.Context, m *kafka.Message) error {
		if s.down.Load() {
			return outage
		}
		s.mu.Lock()
		s.handled[string(m.Key)] = true
		s.mu.Unlock()
		return nil
	})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- svc.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
		pub.Close(10 * time.Second)
	})
	return s
}

func (s *outageService) handledKeys() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.handled)
}

func highWatermark(t *testing.T, topic string) int64 {
	t.Helper()
	c, err := kafka.NewConsumer(&kafka.ConfigMap{"bootstrap.servers": testenv.KafkaBootstrap(t), "group.id": testenv.UniqueName("hw-")})
	require.NoError(t, err)
	defer c.Close()
	md, err := c.GetMetadata(&topic, false, 10000)
	require.NoError(t, err)
	var sum int64
	for _, p := range md.Topics[topic].Partitions {
		_, high, err := c.QueryWatermarkOffsets(topic, p.ID, 10000)
		require.NoError(t, err)
		sum += high
	}
	return sum
}

// A downstream outage is not amplified: 2,000 dead letters whose service is down (every
// redriven record comes straight back to the DLQ), a route with backoff none, max_retries
// 1000 and a 2 s schedule, and the default breaker. Over the scenario's 60 s the worker
// produces at most 3,000 records to the source (without the breaker, one backlog per
// run) and the breaker is open; the records it holds wait as scheduled, their retry
// counts untouched. When the service recovers, the half-open breaker's probes do not come
// back, it closes and the backlog drains without an operator; nothing is lost.
func TestBreakerHoldsADownstreamOutage(t *testing.T) {
	t.Parallel()
	const n = 2000
	bs := testenv.KafkaBootstrap(t)
	orders := kafkatest.CreateTopic(t, bs, 2, nil)
	dlq := kafkatest.CreateTopic(t, bs, 2, nil)
	st := storetest.New(t)
	svc := runOutageService(t, bs, orders, dlq)

	msgs := make([]*kafka.Message, n)
	for i := range msgs {
		msgs[i] = &kafka.Message{Key: []byte(fmt.Sprintf("k%04d", i)), Value: []byte("order"), TopicPartition: kafka.TopicPartition{Partition: kafka.PartitionAny}}
	}
	produce(t, orders, msgs...)
	require.Eventually(t, func() bool { return highWatermark(t, dlq) == n }, 2*time.Minute, 100*time.Millisecond,
		"the service dead-letters every record")

	rc := route(testenv.UniqueName("breaker-"), dlq)
	rc.Schedule = "@every 2s"
	rc.Backoff = &routes.Backoff{None: true}
	maxRetries := 1000
	rc.MaxRetries = &maxRetries
	reg := prometheus.NewRegistry()
	before := highWatermark(t, orders)
	startEngineWith(t, redrive.Options{Store: st, Kafka: kcfg(t), Registry: reg}, rc)
	time.Sleep(60 * time.Second) // the scenario's span: the outage as the schedule meets it
	produced := highWatermark(t, orders) - before
	state := gaugeValue(t, reg, "dlq_worker_route_breaker_state", rc.Name)
	t.Logf("produced to the source in 60 s: %d records (%.2f× the backlog), breaker state %v", produced, float64(produced)/n, state)
	require.GreaterOrEqual(t, produced, int64(n), "the first run redrives the backlog")
	require.LessOrEqual(t, produced, int64(3000))
	require.Equal(t, 1.0, state, "the breaker is open")
	held := gaugeValue(t, reg, "dlq_worker_route_breaker_held_total", rc.Name)
	require.Positive(t, held)
	scheduled, err := st.ListAfter(context.Background(), store.Filter{Statuses: []store.Status{store.StatusScheduled}}, 0, 1000)
	require.NoError(t, err)
	require.NotEmpty(t, scheduled, "the held records wait as scheduled")
	for _, r := range scheduled {
		require.Equal(t, store.ReasonBackoff, r.Reason)
		require.LessOrEqual(t, r.RetryCount, 2, "key %s: a held record's retry count is untouched", r.Key)
	}
	parked, err := st.Count(context.Background(), store.Filter{Statuses: []store.Status{store.StatusParked}})
	require.NoError(t, err)
	require.Zero(t, parked, "the breaker parks nothing")

	svc.down.Store(false) // the service recovers
	require.Eventually(t, func() bool {
		left, err := st.Count(context.Background(), store.Filter{Statuses: []store.Status{store.StatusScheduled}})
		return err == nil && left == 0 && svc.handledKeys() == n
	}, 5*time.Minute, 500*time.Millisecond, "the backlog drains without an operator")
	require.Eventually(t, func() bool { return gaugeValue(t, reg, "dlq_worker_route_breaker_state", rc.Name) == 0 },
		time.Minute, 100*time.Millisecond, "the breaker closed")

	audited := map[string]int{}
	rows, err := st.SearchAudit(context.Background(), store.AuditFilter{Route: rc.Name}, 0, 100)
	require.NoError(t, err)
	for _, a := range rows {
		audited[a.Action]++
		require.NotEmpty(t, a.Reason, "the audit row says why")
	}
	require.Positive(t, audited["breaker_open"])
	require.Positive(t, audited["breaker_closed"])
	rep := requireConserved(t, st, dlq, rc.Group)
	t.Logf("held %v records; audit %v; %s", held, audited, rep)
}
