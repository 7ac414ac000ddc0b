package redrive

import (
	"slices"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/kafkaclient"
	"github.com/dlqops/dlq/internal/routes"
	"github.com/dlqops/dlq/internal/store"
	"github.com/dlqops/dlq/internal/testenv"
	"github.com/dlqops/dlq/internal/testenv/kafkatest"
)

// A resumed partition is fetched at once, not when librdkafka's idle broker thread next
// wakes by itself (up to a second later: every run and every lifted throttle paid it).
// Counted in the worker's own poll ticks: each trial leaves the partition paused with a
// new record waiting until the fetcher idles, starts reading it the way a run does and
// counts the empty polls before the record comes. librdkafka's idle wait is 50 of them.
func TestResumedPartitionIsFetchedWithoutWaitingForTheIdleWakeup(t *testing.T) {
	bootstrap := testenv.KafkaBootstrap(t)
	dlq := kafkatest.CreateTopic(t, bootstrap, 1, nil)
	kc := kafkaclient.Config{BootstrapServers: bootstrap}
	w := testWorker(t, routes.Config{Name: "wake", Topics: []string{dlq}, Group: testenv.UniqueName("wake-")}, kc, nil)
	prod := testProducer(t, kc)

	require.NoError(t, w.consumer.Assign([]kafka.TopicPartition{{Topic: &dlq, Partition: 0, Offset: kafka.OffsetBeginning}}))
	p := &partition{key: partKey{dlq, 0}}
	w.parts.setPaused([]*partition{p}, true)
	var polls []int
	for trial := range 5 {
		produceAcked(t, prod, dlq, 0, []byte{byte(trial)})
		w.idleFetcher(t)
		// As a run starts: the high watermark is read (the broker thread serves the answer,
		// then sleeps), then the partition is resumed.
		_, high, err := w.consumer.QueryWatermarkOffsets(dlq, 0, int(callTimeout/1e6))
		require.NoError(t, err)
		require.Equal(t, int64(trial+1), high)
		w.parts.setPaused([]*partition{p}, false)
		_, n := w.emptyPollsBefore(t, int64(trial))
		polls = append(polls, n)
		w.parts.setPaused([]*partition{p}, true)
	}
	slices.Sort(polls)
	t.Logf("empty polls before the resumed record, sorted: %v", polls)
	require.LessOrEqual(t, polls[len(polls)/2], 10, "median empty polls before a resumed partition's record (librdkafka's idle wait is 50)")
}

// testWorker builds route rc's worker (defaults applied) on an engine of its own that is
// never started; its clients close when t ends. st may be nil.
func testWorker(t *testing.T, rc routes.Config, kc kafkaclient.Config, st *store.Store) *worker {
	t.Helper()
	rc.WithDefaults()
	e, err := New([]routes.Config{rc}, Options{Log: zerolog.New(zerolog.NewTestWriter(t)), Kafka: kc, Store: st,
		Registry: prometheus.NewRegistry(), ReadPath: testenv.ReadPath()})
	require.NoError(t, err)
	w, err := newWorker(e, rc)
	require.NoError(t, err)
	t.Cleanup(w.closeClients)
	return w
}

// testProducer is a producer with the worker's settings, closed when t ends.
func testProducer(t *testing.T, kc kafkaclient.Config) *kafka.Producer {
	t.Helper()
	pc := kafkaclient.ProducerConfig(kc)
	p, err := kafka.NewProducer(&pc)
	require.NoError(t, err)
	t.Cleanup(p.Close)
	return p
}

// produceAcked produces value to topic's partition and waits for its acknowledgement.
func produceAcked(t *testing.T, p *kafka.Producer, topic string, partition int32, value []byte) {
	t.Helper()
	acked := make(chan kafka.Event, 1)
	require.NoError(t, p.Produce(&kafka.Message{TopicPartition: kafka.TopicPartition{Topic: &topic, Partition: partition},
		Value: value}, acked))
	require.NoError(t, (<-acked).(*kafka.Message).TopicPartition.Error)
}

// idleFetcher polls w's paused consumer for 30 ticks, failing on a record: the fetcher's
// last long poll ends and its broker thread idles.
func (w *worker) idleFetcher(t *testing.T) {
	t.Helper()
	for range 30 {
		_, isMsg := w.pollTick().(*kafka.Message)
		require.False(t, isMsg, "a paused partition delivered a record")
	}
}

// pollTick, the unit the wake-up tests count in, waits up to the loop's poll interval
// for a record of w's queue, then takes an event of its consumer's (a record there too,
// when the partition was not routed); on read_path poll, it waits for the consumer's.
func (w *worker) pollTick() kafka.Event {
	if w.records == nil {
		return w.consumer.Poll(int(pollInterval / time.Millisecond))
	}
	if ev := w.records.Next(pollInterval); ev != nil {
		return ev
	}
	return w.consumer.Poll(0)
}

// emptyPollsBefore polls w's consumer until the record at offset comes and returns it
// with the number of empty ticks before it.
func (w *worker) emptyPollsBefore(t *testing.T, offset int64) (*kafka.Message, int) {
	t.Helper()
	for n := 0; ; n++ {
		if m, isMsg := w.pollTick().(*kafka.Message); isMsg {
			require.Equal(t, kafka.Offset(offset), m.TopicPartition.Offset)
			return m, n
		}
		require.Less(t, n, 500, "offset %d: no record after %d polls", offset, n)
	}
}
