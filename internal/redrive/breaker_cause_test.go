package redrive_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
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
	"github.com/dlqops/dlq/internal/testenv/metrictest"
)

// poisonService is a service of topic with one poison cause: records keyed "a…" always
// fail on the inventory lookup and come back; records keyed "b…" fail once on a parse
// error and are handled when redriven. It counts the keys it handled.
type poisonService struct {
	mu      sync.Mutex
	failed  map[string]bool
	handled map[string]bool
}

func runPoisonService(t *testing.T, bootstrap, topic, dlq string) *poisonService {
	t.Helper()
	s := &poisonService{failed: map[string]bool{}, handled: map[string]bool{}}
	pub, err := deadletter.NewPublisher(deadletter.PublisherConfig{BootstrapServers: bootstrap, Topic: dlq})
	require.NoError(t, err)
	svc, err := deadletter.NewConsumer(deadletter.ConsumerConfig{BootstrapServers: bootstrap, Group: testenv.UniqueName("svc-"),
		Topics: []string{topic}, Log: zerolog.Nop()}, pub, func(_ context.Context, m *kafka.Message) error {
		key := string(m.Key)
		s.mu.Lock()
		defer s.mu.Unlock()
		switch {
		case strings.HasPrefix(key, "a"):
			return fmt.Errorf("inventory lookup timed out after %d ms for sku-%d", 100+len(s.failed), len(key)*7919)
		case !s.failed[key]:
			s.failed[key] = true
			return errors.New("cannot parse order at position " + fmt.Sprint(len(s.failed)))
		}
		s.handled[key] = true
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

func (s *poisonService) handledWith(prefix string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for k := range s.handled {
		if strings.HasPrefix(k, prefix) {
			n++
		}
	}
	return n
}

func keyed(prefix string, n int) []*kafka.Message {
	msgs := make([]*kafka.Message, n)
	for i := range msgs {
		msgs[i] = &kafka.Message{Key: []byte(fmt.Sprintf("%s%04d", prefix, i)), Value: []byte("order"), TopicPartition: kafka.TopicPartition{Partition: kafka.PartitionAny}}
	}
	return msgs
}

// A flood where one cause keeps coming back and another does not: the returning cause's
// breaker opens (by fingerprint, the incident's), not the route's; the records of the
// other cause keep draining, a second wave of them too, while the returning cause waits
// as scheduled and is never handled. The cause breaker is audited; nothing is lost.
func TestCauseBreakerStopsThePoisonCauseOnly(t *testing.T) {
	t.Parallel()
	const n = 300
	ctx := context.Background()
	bs := testenv.KafkaBootstrap(t)
	orders := kafkatest.CreateTopic(t, bs, 2, nil)
	dlq := kafkatest.CreateTopic(t, bs, 2, nil)
	st := storetest.New(t)
	svc := runPoisonService(t, bs, orders, dlq)
	produce(t, orders, append(keyed("a", n), keyed("b", n)...)...)
	require.Eventually(t, func() bool { return highWatermark(t, dlq) == 2*n }, 2*time.Minute, 100*time.Millisecond,
		"the service dead-letters every record once")

	rc := route(testenv.UniqueName("cause-"), dlq)
	rc.Backoff = &routes.Backoff{None: true}
	maxRetries := 1000
	rc.MaxRetries = &maxRetries
	rc.Breaker.Ratio = 0.3 // opens before every poison record came back
	reg := prometheus.NewRegistry()
	e := startEngineWith(t, redrive.Options{Store: st, Kafka: kcfg(t), Registry: reg}, rc)
	causes := func() []metrictest.Sample {
		return metrictest.Samples(t, reg, "dlq_worker_cause_breaker_state", map[string]string{"route": rc.Name})
	}
	require.Eventually(t, func() bool { _ = runOnce(e, rc.Name); return len(causes()) > 0 }, 3*time.Minute, 100*time.Millisecond,
		"the returning cause's breaker opens")
	held := causes()
	require.Len(t, held, 1)
	require.Equal(t, 0.0, gaugeValue(t, reg, "dlq_worker_route_breaker_state", rc.Name), "the route's breaker stays closed")

	// The gauge names the cause by the fingerprint of its incident, never by its message.
	incidents, err := st.Incidents(ctx, store.Filter{}, 10)
	require.NoError(t, err)
	var poison string
	for _, in := range incidents {
		if strings.Contains(in.MessageTemplate, "inventory lookup") {
			poison = in.Fingerprint
		}
	}
	require.Equal(t, poison, held[0].Labels["fingerprint"])

	// A second wave of the other cause drains while the poison cause is held.
	produce(t, orders, keyed("c", 100)...) // "c…" keys fail once, as "b…" do
	require.Eventually(t, func() bool {
		_ = runOnce(e, rc.Name)
		return svc.handledWith("b") == n && svc.handledWith("c") == 100
	}, 3*time.Minute, 100*time.Millisecond, "the other cause drains")
	require.Zero(t, svc.handledWith("a"))
	require.Equal(t, 0.0, gaugeValue(t, reg, "dlq_worker_route_breaker_state", rc.Name))
	require.NotEmpty(t, causes(), "the poison cause is still held")
	waiting, err := st.Count(ctx, store.Filter{Fingerprint: poison, Statuses: []store.Status{store.StatusScheduled}})
	require.NoError(t, err)
	require.Positive(t, waiting, "the poison cause's records wait as scheduled")
	parked, err := st.Count(ctx, store.Filter{Statuses: []store.Status{store.StatusParked}})
	require.NoError(t, err)
	require.Zero(t, parked, "the breaker parks nothing")

	rows, err := st.SearchAudit(ctx, store.AuditFilter{Route: rc.Name}, 0, 100)
	require.NoError(t, err)
	var opened bool
	for _, a := range rows {
		opened = opened || (a.Action == "cause_breaker_open" && strings.Contains(a.Reason, poison))
		require.NotEqual(t, "breaker_open", a.Action, "the route's breaker never opened")
	}
	require.True(t, opened, "the cause breaker's open is audited with its fingerprint")
	t.Logf("%d poison records wait; %s", waiting, requireConserved(t, st, dlq, rc.Group))
}
