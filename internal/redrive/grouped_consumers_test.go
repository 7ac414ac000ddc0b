package redrive_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/deadletter"
	"github.com/dlqops/dlq/internal/audit"
	"github.com/dlqops/dlq/internal/headers"
	"github.com/dlqops/dlq/internal/routes"
	"github.com/dlqops/dlq/internal/store"
	"github.com/dlqops/dlq/internal/store/storetest"
	"github.com/dlqops/dlq/internal/testenv"
	"github.com/dlqops/dlq/internal/testenv/kafkatest"
	"github.com/dlqops/dlq/internal/testenv/metrictest"
)

// service is one consumer group of the orders topic, reading through the deadletter
// library: what its handler was given, first deliveries and redrives apart.
type service struct {
	group    string
	registry *prometheus.Registry
	mu       sync.Mutex
	first    map[string]int // key → deliveries that carried no redrive id
	redriven map[string]int // key → deliveries of a redrive
}

func (s *service) counts() (first, redriven int, perKey map[string]int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	perKey = map[string]int{}
	for _, n := range s.first {
		first += n
	}
	for k, n := range s.redriven {
		redriven += n
		perKey[k] = n
	}
	return first, redriven, perKey
}

// startService runs a deadletter.Consumer of group on topic until the test ends; fails
// says which first deliveries its handler fails (and so dead-letters to dlq).
func startService(t *testing.T, bs, topic, dlq, group string, fails func(key string) bool) *service {
	t.Helper()
	s := &service{group: group, registry: prometheus.NewRegistry(), first: map[string]int{}, redriven: map[string]int{}}
	pub, err := deadletter.NewPublisher(deadletter.PublisherConfig{BootstrapServers: bs, Topic: dlq})
	require.NoError(t, err)
	c, err := deadletter.NewConsumer(deadletter.ConsumerConfig{BootstrapServers: bs, Group: group, Topics: []string{topic},
		Registerer: s.registry, Log: zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel),
		Kafka: kafka.ConfigMap{"auto.commit.interval.ms": 100}},
		pub, func(_ context.Context, m *kafka.Message) error {
			key := string(m.Key)
			_, again := headerOf(m, headers.KeyRedriveID)
			s.mu.Lock()
			defer s.mu.Unlock()
			if again {
				s.redriven[key]++
				return nil
			}
			s.first[key]++
			if fails(key) {
				return errors.New("downstream refused " + key)
			}
			return nil
		})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
		pub.Close(10 * time.Second)
	})
	return s
}

// Three consumer groups read one topic; one fails some records through the deadletter
// library. After the redrive, the failing group receives each failed record exactly
// once more and the two healthy groups none, whether the route redrives to the group's
// own topic or to the source topic addressed to the group.
func TestRedriveReachesOnlyTheFailingGroup(t *testing.T) {
	for _, mode := range []string{routes.RedriveToGroupTopic, routes.RedriveToGroupHeader} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			bs := testenv.KafkaBootstrap(t)
			orders := kafkatest.CreateTopic(t, bs, 2, nil)
			dlq := kafkatest.CreateTopic(t, bs, 1, nil)
			failing := testenv.UniqueName("svc-a-")
			if mode == routes.RedriveToGroupTopic {
				kafkatest.CreateNamedTopic(t, bs, routes.GroupTopic(routes.DefaultGroupTopicTemplate, orders, failing), 2, nil)
			}
			poison := func(key string) bool { return len(key) > 6 && key[:6] == "poison" }
			svcA := startService(t, bs, orders, dlq, failing, poison)
			healthy := []*service{
				startService(t, bs, orders, dlq, testenv.UniqueName("svc-b-"), func(string) bool { return false }),
				startService(t, bs, orders, dlq, testenv.UniqueName("svc-c-"), func(string) bool { return false }),
			}
			var msgs []*kafka.Message
			for i := range 10 {
				key := fmt.Sprintf("ok-%d", i)
				if i%3 == 0 {
					key = fmt.Sprintf("poison-%d", i)
				}
				msgs = append(msgs, &kafka.Message{Key: []byte(key), Value: []byte("order " + key)})
			}
			produce(t, orders, msgs...)
			const poisoned = 4
			for _, s := range append([]*service{svcA}, healthy...) {
				require.Eventually(t, func() bool { first, _, _ := s.counts(); return first == len(msgs) }, 90*time.Second, 100*time.Millisecond,
					"group %s reads every record once", s.group)
			}
			require.Len(t, readAll(t, dlq), poisoned)

			clock := newClock()
			st := storetest.New(t, store.WithClock(clock.Now))
			rc := route("to-failing-group", dlq)
			rc.RedriveTo = mode
			rc.Backoff = &routes.Backoff{None: true}
			e := startEngine(t, st, clock, rc)
			runNow(t, e, rc.Name)

			require.Eventually(t, func() bool { _, n, _ := svcA.counts(); return n >= poisoned }, 90*time.Second, 100*time.Millisecond)
			if mode == routes.RedriveToGroupHeader {
				// The healthy groups read the addressed records and skip them.
				for _, s := range healthy {
					require.Eventually(t, func() bool {
						return metrictest.Sum(t, s.registry, "dlq_consumer_records_total", map[string]string{"outcome": "skipped_other_group"}) == poisoned
					}, 90*time.Second, 100*time.Millisecond, "group %s skips every record addressed to %s", s.group, failing)
				}
			} else {
				require.Len(t, readAll(t, orders), len(msgs), "nothing went back to the source topic")
			}
			n, err := st.Count(context.Background(), store.Filter{})
			require.NoError(t, err)
			require.Zero(t, n, "nothing parked or scheduled")

			_, redriven, perKey := svcA.counts()
			require.Equal(t, poisoned, redriven)
			for key, n := range perKey {
				require.True(t, poison(key), key)
				require.Equal(t, 1, n, "group %s receives %s exactly once more", failing, key)
			}
			for _, s := range healthy {
				first, redriven, _ := s.counts()
				require.Equal(t, len(msgs), first)
				require.Zero(t, redriven, "healthy group %s receives none of the redriven records", s.group)
			}
			rep, err := audit.Run(context.Background(), kcfg(t), st, dlq, rc.Group, audit.WithGroupTopics(rc.GroupTopicTemplate))
			require.NoError(t, err)
			require.True(t, rep.OK(), rep.String())
			require.Equal(t, poisoned, rep.OnTarget)
		})
	}
}
