package redrive_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/redrive"
	"github.com/dlqops/dlq/internal/routes"
	"github.com/dlqops/dlq/internal/store"
	"github.com/dlqops/dlq/internal/store/storetest"
	"github.com/dlqops/dlq/internal/testenv"
	"github.com/dlqops/dlq/internal/testenv/kafkatest"
)

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
// 1000 and a 2 s schedule, and the default breaker. Without the breaker the route sends
// the backlog again every run, 30 backlogs a minute. With it, the route has sent at most
// 3,000 records to the source when the breaker opens: the backlog once, and again only
// what came back before half of it had (ratio 0.5), so the bound holds however slowly
// the records come back. Once open, the route sends nothing but its probes for open_for
// (a minute), and the records it holds wait as scheduled, their retry counts untouched.
// When the service recovers, the half-open breaker's probes do not come back, it closes
// and the backlog drains without an operator; nothing is lost.
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
	outageStart := time.Now()
	require.Eventually(t, func() bool { return highWatermark(t, dlq) == n }, 2*time.Minute, 100*time.Millisecond,
		"the service dead-letters every record")
	t.Logf("the service dead-lettered the backlog in %s", time.Since(outageStart))

	rc := route(testenv.UniqueName("breaker-"), dlq)
	rc.Schedule = "@every 2s"
	rc.Backoff = &routes.Backoff{None: true}
	maxRetries := 1000
	rc.MaxRetries = &maxRetries
	reg := prometheus.NewRegistry()
	before := highWatermark(t, orders)
	startEngineWith(t, redrive.Options{Store: st, Kafka: kcfg(t), Registry: reg}, rc)
	require.Eventually(t, func() bool { return gaugeValue(t, reg, "dlq_worker_route_breaker_state", rc.Name) == 1 },
		5*time.Minute, 100*time.Millisecond, "the breaker opens")
	opened := time.Now()
	atOpen := highWatermark(t, orders) - before

	// Two runs that start after the opening end: whatever was in flight when it opened is
	// acknowledged, and the open breaker has had a run's time to hold the route.
	afterRuns := func(k int) int64 {
		require.Eventually(t, func() bool { return runsSince(t, st, rc.Name, opened) >= k }, 2*time.Minute, 100*time.Millisecond)
		return highWatermark(t, orders) - before
	}
	settled := afterRuns(1)
	produced := afterRuns(2)
	bound := n + int64(routes.DefaultBreakerRatio*n)
	t.Logf("produced to the source: %d records when the breaker opened, %d a run later (%.2f× the backlog, bound %d)",
		atOpen, settled, float64(settled)/n, bound)
	require.GreaterOrEqual(t, settled, int64(n), "the first run redrives the backlog")
	require.LessOrEqual(t, settled, bound, "the backlog once, and again only what came back before the breaker opened")
	require.LessOrEqual(t, produced-settled, int64(routes.DefaultBreakerProbes), "the open breaker sends at most its probes")
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

// runsSince counts the runs of route that started after since and have ended.
func runsSince(t *testing.T, st *store.Store, route string, since time.Time) int {
	t.Helper()
	runs, err := st.ListRuns(context.Background(), route, 20)
	require.NoError(t, err)
	k := 0
	for _, r := range runs {
		if r.StartedAt.After(since) && r.Status != store.RunRunning {
			k++
		}
	}
	return k
}
