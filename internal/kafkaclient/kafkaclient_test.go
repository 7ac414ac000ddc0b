package kafkaclient_test

import (
	"runtime"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/dlqops/dlq/internal/kafkaclient"
	"github.com/dlqops/dlq/internal/testenv"
	"github.com/dlqops/dlq/internal/testenv/kafkatest"
)

func TestMain(m *testing.M) {
	// librdkafka's own threads are not goroutines; the check covers ours.
	goleak.VerifyTestMain(m)
}

func newProducer(t *testing.T, bootstrap string) *kafka.Producer {
	t.Helper()
	cm := kafkaclient.ProducerConfig(kafkaclient.Config{BootstrapServers: bootstrap})
	cm["message.timeout.ms"] = 60000
	p, err := kafka.NewProducer(&cm)
	require.NoError(t, err)
	t.Cleanup(p.Close)
	return p
}

// produceSync sends one record and waits for its delivery report.
func produceSync(t *testing.T, p *kafka.Producer, m *kafka.Message) *kafka.Message {
	t.Helper()
	done := make(chan kafka.Event, 1)
	require.NoError(t, p.Produce(m, done))
	ev := <-done
	dm, ok := ev.(*kafka.Message)
	require.True(t, ok, "unexpected event %v", ev)
	require.NoError(t, dm.TopicPartition.Error)
	return dm
}

func TestProduceConsumeCommitRoundTrip(t *testing.T) {
	t.Parallel()
	bootstrap := testenv.KafkaBootstrap(t)
	topic := kafkatest.CreateTopic(t, bootstrap, 1, nil)
	p := newProducer(t, bootstrap)

	ts := time.Now().Add(-time.Hour).Truncate(time.Millisecond) // within the broker's 7-day retention, or it deletes the records
	sent := []*kafka.Message{
		{Key: []byte("k1"), Value: []byte("v1"), Timestamp: ts, Headers: []kafka.Header{
			{Key: "h", Value: []byte{0x00, 0xff, 0x10}}, {Key: "h", Value: []byte("dup")}, {Key: "empty", Value: []byte{}},
		}},
		{Key: []byte("k2"), Value: nil, Timestamp: ts},       // tombstone
		{Key: nil, Value: []byte{}, Timestamp: ts},           // null key, empty (not null) value
		{Key: []byte{0xde, 0xad}, Value: []byte{0xbe, 0xef}}, // binary
	}
	for _, m := range sent {
		m.TopicPartition = kafka.TopicPartition{Topic: &topic, Partition: 0}
		produceSync(t, p, m)
	}

	group := testenv.UniqueName("g-")
	cm := kafkaclient.ConsumerConfig(kafkaclient.Config{BootstrapServers: bootstrap}, group)
	c, err := kafka.NewConsumer(&cm)
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.Assign([]kafka.TopicPartition{{Topic: &topic, Partition: 0, Offset: kafka.OffsetBeginning}}))
	for i, want := range sent {
		got, err := c.ReadMessage(30 * time.Second)
		require.NoError(t, err)
		require.Equal(t, want.Key, got.Key, "record %d key", i)
		require.Equal(t, want.Value, got.Value, "record %d value", i)
		require.Equal(t, want.Value == nil, got.Value == nil, "record %d null vs empty value", i)
		require.Equal(t, want.Key == nil, got.Key == nil, "record %d null vs empty key", i)
		if len(want.Headers) > 0 {
			require.Equal(t, want.Headers, got.Headers, "record %d headers", i)
		} else {
			require.Empty(t, got.Headers)
		}
		if !want.Timestamp.IsZero() {
			require.True(t, want.Timestamp.Equal(got.Timestamp), "record %d timestamp", i)
		}
		require.Equal(t, kafka.Offset(i), got.TopicPartition.Offset)
	}

	// Commit the offset after the third record and read it back from the coordinator.
	_, err = c.CommitOffsets([]kafka.TopicPartition{{Topic: &topic, Partition: 0, Offset: 3}})
	require.NoError(t, err)
	committed, err := c.Committed([]kafka.TopicPartition{{Topic: &topic, Partition: 0}}, 10000)
	require.NoError(t, err)
	require.Equal(t, kafka.Offset(3), committed[0].Offset)
}

func TestBrokerRestartMidStream(t *testing.T) {
	t.Parallel()
	b := kafkatest.StartBroker(t)
	topic := kafkatest.CreateTopic(t, b.Bootstrap(), 1, nil)
	p := newProducer(t, b.Bootstrap())
	first := produceSync(t, p, &kafka.Message{TopicPartition: kafka.TopicPartition{Topic: &topic, Partition: 0}, Value: []byte("before")})

	b.Stop()
	// A record sent while the broker is down is held and delivered once it is back.
	during := make(chan kafka.Event, 1)
	require.NoError(t, p.Produce(&kafka.Message{TopicPartition: kafka.TopicPartition{Topic: &topic, Partition: 0}, Value: []byte("during")}, during))
	b.Start()
	ev := (<-during).(*kafka.Message)
	require.NoError(t, ev.TopicPartition.Error)
	after := produceSync(t, p, &kafka.Message{TopicPartition: kafka.TopicPartition{Topic: &topic, Partition: 0}, Value: []byte("after")})
	require.Equal(t, first.TopicPartition.Offset+2, after.TopicPartition.Offset, "nothing lost, nothing duplicated")

	cm := kafkaclient.ConsumerConfig(kafkaclient.Config{BootstrapServers: b.Bootstrap()}, testenv.UniqueName("g-"))
	c, err := kafka.NewConsumer(&cm)
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.Assign([]kafka.TopicPartition{{Topic: &topic, Partition: 0, Offset: kafka.OffsetBeginning}}))
	var got []string
	for range 3 {
		m, err := c.ReadMessage(30 * time.Second)
		require.NoError(t, err)
		got = append(got, string(m.Value))
	}
	require.Equal(t, []string{"before", "during", "after"}, got)
}

// A producer costs the Go heap little: confluent-kafka-go's default channels (1,000,000
// slots each) were 24 MB of live heap per producer, which doubled into the garbage
// collector's target and were scanned on every cycle (BenchmarkWorker's peak RSS).
func TestProducerHeapIsSmall(t *testing.T) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	cm := kafkaclient.ProducerConfig(kafkaclient.Config{BootstrapServers: "127.0.0.1:1"})
	cm["log_level"] = 0 // nothing listens on that port: librdkafka need not say so
	p, err := kafka.NewProducer(&cm)
	require.NoError(t, err)
	defer p.Close()
	runtime.GC()
	runtime.ReadMemStats(&after)
	grew := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	require.Less(t, grew, int64(4<<20), "a producer holds %d bytes of Go heap", grew)
	runtime.KeepAlive(p)
}
