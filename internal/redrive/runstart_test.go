package redrive

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/kafkaclient"
	"github.com/dlqops/dlq/internal/redrive/tracker"
	"github.com/dlqops/dlq/internal/routes"
	"github.com/dlqops/dlq/internal/store/storetest"
	"github.com/dlqops/dlq/internal/testenv"
	"github.com/dlqops/dlq/internal/testenv/kafkatest"
)

// A run's start sends one watermark query per partition, all on their way together,
// which also wake the fetcher of the partitions it resumed: it used to query each
// partition twice, one after the other (its watermarks, then a wake-up after the
// resume). Counted in librdkafka's own statistics of the requests the consumer sent. A
// partition with nothing to read is paused again.
func TestRunStartSendsOneWatermarkRequestPerPartition(t *testing.T) {
	const parts = 3
	bootstrap := testenv.KafkaBootstrap(t)
	dlq := kafkatest.CreateTopic(t, bootstrap, parts+1, nil) // the last one stays empty
	prod := testProducer(t, kafkaclient.Config{BootstrapServers: bootstrap})
	for i := range parts {
		produceAcked(t, prod, dlq, int32(i), []byte("v"))
	}
	kc := kafkaclient.Config{BootstrapServers: bootstrap, Extra: map[string]string{"statistics.interval.ms": "100"}}
	w := testWorker(t, routes.Config{Name: "start", Topics: []string{dlq}, Group: testenv.UniqueName("start-")}, kc, storetest.New(t))
	tps := make([]kafka.TopicPartition, parts+1)
	for i := range tps {
		tps[i] = kafka.TopicPartition{Topic: &dlq, Partition: int32(i), Offset: 0} // no offset lookup
	}
	w.assign(tps)
	require.Len(t, w.parts.byKey, parts+1)

	before := listOffsetsSent(t, w.consumer)
	r := &runState{started: time.Now()}
	require.NoError(t, w.runner.beginReading(context.Background(), r))
	after := listOffsetsSent(t, w.consumer)

	// A watermark query is two ListOffsets requests: the log start and the log end.
	require.Equal(t, 2*(parts+1), after-before, "ListOffsets requests at the run's start")
	require.Len(t, r.parts, parts, "the partitions with records to read")
	for _, p := range w.parts.byKey {
		require.Equal(t, p.key.partition == parts, p.paused, "partition %d paused", p.key.partition)
		require.Equal(t, p.key.partition < parts, p.reading, "partition %d reading", p.key.partition)
	}
}

// listOffsetsSent polls c (its records are dropped) until statistics emitted after the
// call arrive, and returns how many ListOffsets requests (watermark queries) c sent.
func listOffsetsSent(t *testing.T, c *kafka.Consumer) int {
	t.Helper()
	for c.Poll(0) != nil { // statistics queued before now
	}
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		st, ok := c.Poll(100).(*kafka.Stats)
		if !ok {
			continue
		}
		var s struct {
			Brokers map[string]struct {
				Req map[string]int `json:"req"`
			} `json:"brokers"`
		}
		require.NoError(t, json.Unmarshal([]byte(st.String()), &s))
		n := 0
		for _, b := range s.Brokers {
			n += b.Req["ListOffsets"]
		}
		return n
	}
	t.Fatal("no statistics from the consumer within 30 s")
	return 0
}

// The watermark requests of a run's start wake the fetcher of the partitions it resumed
// before them (librdkafka's resume alone does not: its idle broker thread would fetch up to
// a second later). Counted in the worker's own poll ticks, as in
// TestResumedPartitionIsFetchedWithoutWaitingForTheIdleWakeup, through beginReading.
func TestRunStartFetchesWithoutWaitingForTheIdleWakeup(t *testing.T) {
	bootstrap := testenv.KafkaBootstrap(t)
	dlq := kafkatest.CreateTopic(t, bootstrap, 1, nil)
	kc := kafkaclient.Config{BootstrapServers: bootstrap}
	w := testWorker(t, routes.Config{Name: "startwake", Topics: []string{dlq}, Group: testenv.UniqueName("startwake-")}, kc, storetest.New(t))
	prod := testProducer(t, kc)
	w.assign([]kafka.TopicPartition{{Topic: &dlq, Partition: 0, Offset: 0}})
	p := w.parts.byKey[partKey{dlq, 0}]
	p.trk = tracker.New(0)

	var polls []int
	for trial := range 5 {
		produceAcked(t, prod, dlq, 0, []byte{byte(trial)})
		w.idleFetcher(t)
		r := &runState{started: time.Now()}
		require.NoError(t, w.runner.beginReading(context.Background(), r))
		require.Len(t, r.parts, 1, "trial %d", trial)
		m, n := w.emptyPollsBefore(t, int64(trial))
		require.NoError(t, p.trk.Add(int64(m.TopicPartition.Offset)))
		p.trk.Done(int64(m.TopicPartition.Offset))
		polls = append(polls, n)
		w.parts.stopReading(p)
	}
	slices.Sort(polls)
	t.Logf("empty polls before the first record of a run, sorted: %v", polls)
	require.LessOrEqual(t, polls[len(polls)/2], 10, "median empty polls before a run's first record (librdkafka's idle wait is 50)")
}
