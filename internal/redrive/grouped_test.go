package redrive_test

import (
	"context"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/audit"
	"github.com/dlqops/dlq/internal/headers"
	"github.com/dlqops/dlq/internal/redrive"
	"github.com/dlqops/dlq/internal/routes"
	"github.com/dlqops/dlq/internal/store"
	"github.com/dlqops/dlq/internal/store/storetest"
	"github.com/dlqops/dlq/internal/testenv"
	"github.com/dlqops/dlq/internal/testenv/kafkatest"
	"github.com/dlqops/dlq/internal/testenv/metrictest"
)

// groupDeadLetters are dead letters of topic failed by svc-a, written at at (the DLQ
// offsets 0, 1, 2 of a fresh DLQ): one naming it in our header, one in Spring's, and
// one naming no group at all.
func groupDeadLetters(topic string, at time.Time) []*kafka.Message {
	old := ms(at)
	msgs := []*kafka.Message{
		{Key: []byte("ours"), Value: []byte("v1"), Headers: []kafka.Header{hdr(headers.KeyRetryCount, "1"),
			hdr(headers.KeyOriginalTopic, topic), hdr(headers.KeyLastFailure, old), hdr(headers.KeyConsumerGroup, "svc-a")}},
		{Key: []byte("spring"), Value: []byte("v2"), Headers: []kafka.Header{hdr("kafka_dlt-original-topic", topic),
			{Key: "kafka_dlt-original-partition", Value: []byte{0, 0, 0, 0}}, hdr("kafka_dlt-original-consumer-group", "svc-a"),
			hdr("kafka_dlt-exception-fqcn", "java.lang.IllegalStateException")}},
		{Key: []byte("nobody"), Value: []byte("v3"), Headers: []kafka.Header{hdr(headers.KeyRetryCount, "1"),
			hdr(headers.KeyOriginalTopic, topic), hdr(headers.KeyLastFailure, old)}},
	}
	for _, m := range msgs {
		m.Timestamp = at
	}
	return msgs
}

func headerOf(m *kafka.Message, key string) (string, bool) {
	v, ok := "", false
	for _, h := range m.Headers {
		if h.Key == key {
			v, ok = string(h.Value), true
		}
	}
	return v, ok
}

// dlqKeys are the keys of groupDeadLetters by DLQ offset.
var dlqKeys = []string{"ours", "spring", "nobody"}

func parkedReasons(t *testing.T, st *store.Store) map[string]store.Reason {
	t.Helper()
	page, err := st.List(context.Background(), store.Filter{}, "", 100)
	require.NoError(t, err)
	got := map[string]store.Reason{}
	for _, r := range page.Records {
		got[dlqKeys[r.DLQ.Offset]] = r.Reason
	}
	return got
}

// Dead letters that name svc-a through our header or Spring's, on a group_topic route,
// land on <topic>.redrive.svc-a and none on the source topic; one naming no group is
// parked unknown_group.
func TestGroupTopicRouteRedrivesToTheFailingGroupsTopic(t *testing.T) {
	t.Parallel()
	bs := testenv.KafkaBootstrap(t)
	dlq := kafkatest.CreateTopic(t, bs, 1, nil)
	orders := kafkatest.CreateTopic(t, bs, 3, nil)
	svcA := kafkatest.CreateNamedTopic(t, bs, orders+".redrive.svc-a", 2, nil)
	clock := newClock()
	st := storetest.New(t, store.WithClock(clock.Now))
	produce(t, dlq, groupDeadLetters(orders, clock.Now().Add(-2*time.Hour))...)

	rc := route("grouped", dlq)
	rc.RedriveTo = routes.RedriveToGroupTopic
	rc.AllowedTargets = []string{orders, `^` + orders + `\.redrive\..+`}
	rc.MetricGroups = []string{"svc-a"}
	reg := prometheus.NewRegistry()
	e := startEngineWith(t, redrive.Options{Clock: clock.Now, Store: st, Kafka: kcfg(t), Registry: reg}, rc)
	require.Eventually(t, func() bool {
		runNow(t, e, "grouped")
		n, err := st.Count(context.Background(), store.Filter{})
		return err == nil && n == 1
	}, 60*time.Second, 100*time.Millisecond)

	got := readAll(t, svcA)
	require.Len(t, got, 2)
	keys := map[string]bool{}
	for _, m := range got {
		keys[string(m.Key)] = true
		group, _ := headerOf(m, headers.KeyConsumerGroup)
		require.Equal(t, "svc-a", group, "the failing group travels on")
		original, _ := headerOf(m, headers.KeyOriginalTopic)
		require.Equal(t, orders, original, "the record still names its original topic")
		_, addressed := headerOf(m, headers.KeyTargetGroup)
		require.False(t, addressed, "a group's own topic needs no address")
	}
	require.Equal(t, map[string]bool{"ours": true, "spring": true}, keys)
	require.Empty(t, readAll(t, orders), "nothing goes back to the source topic")
	require.Equal(t, map[string]store.Reason{"nobody": store.ReasonUnknownGroup}, parkedReasons(t, st))
	rep, err := audit.Run(context.Background(), kcfg(t), st, dlq, rc.Group, audit.WithGroupTopics(rc.GroupTopicTemplate))
	require.NoError(t, err)
	require.True(t, rep.OK(), rep.String())
	require.Equal(t, 2, rep.OnTarget, "the audit finds the records on the group's topic")
	require.Equal(t, 2.0, metrictest.Sum(t, reg, "dlq_worker_group_redriven_total",
		map[string]string{"route": "grouped", "group": "svc-a", "redrive_to": routes.RedriveToGroupTopic}))
	require.Equal(t, 1.0, metrictest.Sum(t, reg, "dlq_worker_parked_total", map[string]string{"route": "grouped", "reason": "unknown_group"}))
}

// On a group_header route the records go back to the source topic addressed to the
// failing group; one naming no group is parked unknown_group.
func TestGroupHeaderRouteAddressesTheFailingGroup(t *testing.T) {
	t.Parallel()
	bs := testenv.KafkaBootstrap(t)
	dlq := kafkatest.CreateTopic(t, bs, 1, nil)
	orders := kafkatest.CreateTopic(t, bs, 3, nil)
	clock := newClock()
	st := storetest.New(t, store.WithClock(clock.Now))
	produce(t, dlq, groupDeadLetters(orders, clock.Now().Add(-2*time.Hour))...)

	rc := route("addressed", dlq)
	rc.RedriveTo = routes.RedriveToGroupHeader
	reg := prometheus.NewRegistry()
	e := startEngineWith(t, redrive.Options{Clock: clock.Now, Store: st, Kafka: kcfg(t), Registry: reg}, rc)
	require.Eventually(t, func() bool {
		runNow(t, e, "addressed")
		n, err := st.Count(context.Background(), store.Filter{})
		return err == nil && n == 1
	}, 60*time.Second, 100*time.Millisecond)

	got := readAll(t, orders)
	require.Len(t, got, 2)
	for _, m := range got {
		target, ok := headerOf(m, headers.KeyTargetGroup)
		require.True(t, ok, "record %s is addressed", m.Key)
		require.Equal(t, "svc-a", target)
	}
	require.Equal(t, map[string]store.Reason{"nobody": store.ReasonUnknownGroup}, parkedReasons(t, st))
	requireConserved(t, st, dlq, rc.Group)
	require.Equal(t, 2.0, metrictest.Sum(t, reg, "dlq_worker_group_redriven_total",
		map[string]string{"route": "addressed", "group": routes.MetricGroupOther, "redrive_to": routes.RedriveToGroupHeader}),
		"a group metric_groups does not list is no label of its own")
	require.Empty(t, metrictest.Samples(t, reg, "dlq_worker_group_redriven_total", map[string]string{"group": "svc-a"}))
}

// A group topic that does not exist parks the record unknown_topic: the worker never
// creates a topic, a group's included.
func TestGroupTopicThatDoesNotExistIsParked(t *testing.T) {
	t.Parallel()
	bs := testenv.KafkaBootstrap(t)
	dlq := kafkatest.CreateTopic(t, bs, 1, nil)
	orders := kafkatest.CreateTopic(t, bs, 1, nil)
	clock := newClock()
	st := storetest.New(t, store.WithClock(clock.Now))
	produce(t, dlq, groupDeadLetters(orders, clock.Now().Add(-2*time.Hour))[:1]...)

	rc := route("nogrouptopic", dlq)
	rc.RedriveTo = routes.RedriveToGroupTopic
	e := startEngine(t, st, clock, rc)
	require.Eventually(t, func() bool {
		runNow(t, e, "nogrouptopic")
		n, err := st.Count(context.Background(), store.Filter{})
		return err == nil && n == 1
	}, 60*time.Second, 100*time.Millisecond)
	require.Equal(t, map[string]store.Reason{"ours": store.ReasonUnknownTopic}, parkedReasons(t, st))
	require.Empty(t, readAll(t, orders))
}
