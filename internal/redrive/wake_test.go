package redrive

import (
	"slices"
	"testing"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/config"
	"github.com/dlqops/dlq/internal/kafkaclient"
	"github.com/dlqops/dlq/internal/redrive/routes"
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
	rc := routes.Config{Name: "wake", Topics: []string{dlq}, Group: testenv.UniqueName("wake-")}
	rc.WithDefaults()
	kc := config.Kafka{BootstrapServers: bootstrap}
	e, err := New([]routes.Config{rc}, Options{Log: zerolog.New(zerolog.NewTestWriter(t)), Kafka: kc, Registry: prometheus.NewRegistry()})
	require.NoError(t, err)
	w, err := newWorker(e, rc)
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = w.consumer.Close()
		w.producer.Close()
	})
	pc := kafkaclient.ProducerConfig(kc)
	prod, err := kafka.NewProducer(&pc)
	require.NoError(t, err)
	t.Cleanup(prod.Close)

	require.NoError(t, w.consumer.Assign([]kafka.TopicPartition{{Topic: &dlq, Partition: 0, Offset: kafka.OffsetBeginning}}))
	p := &partition{key: partKey{dlq, 0}}
	w.parts.setPaused([]*partition{p}, true)
	const pollMs = int(pollInterval / 1e6)
	var polls []int
	for trial := range 5 {
		acked := make(chan kafka.Event, 1)
		require.NoError(t, prod.Produce(&kafka.Message{TopicPartition: kafka.TopicPartition{Topic: &dlq, Partition: 0},
			Value: []byte{byte(trial)}}, acked))
		require.NoError(t, (<-acked).(*kafka.Message).TopicPartition.Error)
		for range 30 { // the fetcher's last long poll ends and its broker thread idles
			_, isMsg := w.consumer.Poll(pollMs).(*kafka.Message)
			require.False(t, isMsg, "a paused partition delivered a record")
		}
		// As a run starts: the high watermark is read (the broker thread serves the answer,
		// then sleeps), then the partition is resumed.
		_, high, err := w.consumer.QueryWatermarkOffsets(dlq, 0, int(callTimeout/1e6))
		require.NoError(t, err)
		require.Equal(t, int64(trial+1), high)
		w.parts.setPaused([]*partition{p}, false)
		n := 0
		for {
			m, isMsg := w.consumer.Poll(pollMs).(*kafka.Message)
			if isMsg {
				require.Equal(t, kafka.Offset(trial), m.TopicPartition.Offset)
				break
			}
			n++
			require.Less(t, n, 500, "trial %d: no record after %d polls", trial, n)
		}
		polls = append(polls, n)
		w.parts.setPaused([]*partition{p}, true)
	}
	slices.Sort(polls)
	t.Logf("empty polls before the resumed record, sorted: %v", polls)
	require.LessOrEqual(t, polls[len(polls)/2], 10, "median empty polls before a resumed partition's record (librdkafka's idle wait is 50)")
}
