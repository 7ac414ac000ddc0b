package delivery

import (
	"regexp"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/config"
	"github.com/dlqops/dlq/internal/headers"
	"github.com/dlqops/dlq/internal/testenv"
	"github.com/dlqops/dlq/internal/testenv/kafkatest"
)

// orderedProducer is a producer as the worker's, and an Ordered on it, closed first.
func orderedProducer(t *testing.T, bootstrap string) (*kafka.Producer, *Ordered) {
	t.Helper()
	cm := ProducerConfig(config.Kafka{BootstrapServers: bootstrap})
	p, err := kafka.NewProducer(&cm)
	require.NoError(t, err)
	t.Cleanup(p.Close)
	o, err := NewOrdered(p)
	require.NoError(t, err)
	t.Cleanup(o.Close)
	return p, o
}

// report waits for the next delivery report on p's events channel.
func report(t *testing.T, p *kafka.Producer) *kafka.Message {
	t.Helper()
	for {
		select {
		case ev := <-p.Events():
			if m, ok := ev.(*kafka.Message); ok {
				return m
			}
		case <-time.After(30 * time.Second):
			t.Fatal("no delivery report within 30 s")
		}
	}
}

// A record leaves through Ordered byte for byte as through Produce, confluent-kafka-go's
// path: a null key or value stays null, an empty one empty, and so do header values; the
// timestamp and the foreign headers' order are kept. Each report is matched to its
// record's opaque.
func TestOrderedProducesWhatProduceDoes(t *testing.T) {
	bootstrap := testenv.KafkaBootstrap(t)
	viaProduce := kafkatest.CreateTopic(t, bootstrap, 1, nil)
	viaOrdered := kafkatest.CreateTopic(t, bootstrap, 1, nil)
	p, o := orderedProducer(t, bootstrap)
	at := time.Date(2026, 5, 4, 3, 2, 1, 0, time.UTC)
	env := headers.Envelope{RetryCount: 2, OriginalTopic: "orders", OriginalPartition: -1, OriginalOffset: -1}
	srcs := []Source[kafka.Header]{
		{Key: nil, Value: nil},
		{Key: []byte{}, Value: []byte{}, Timestamp: at},
		{Key: []byte("k"), Value: []byte("v\x00w"), Timestamp: at, Headers: []kafka.Header{
			{Key: "null", Value: nil}, {Key: "empty", Value: []byte{}}, {Key: "b", Value: []byte{0xff, 0}}, {Key: "a", Value: []byte("1")}}},
	}
	var enc Encoder
	opts := headers.DefaultEncodeOptions()
	for i, src := range srcs {
		reports := make(chan kafka.Event, 1)
		require.NoError(t, Produce(&enc, p, reports, Destination{Topic: viaProduce}, src, env, opts, i))
		require.NoError(t, (<-reports).(*kafka.Message).TopicPartition.Error)
		require.NoError(t, o.Produce(Destination{Topic: viaOrdered}, src, env, opts, i))
	}
	for i := range srcs {
		m := report(t, p)
		require.NoError(t, m.TopicPartition.Error)
		require.Nil(t, m.Opaque)
		opaque, err := o.Match(m)
		require.NoError(t, err)
		require.Equal(t, i, opaque)
		require.Equal(t, kafka.Offset(i), m.TopicPartition.Offset)
	}
	want, got := readAll(t, bootstrap, viaProduce, len(srcs)), readAll(t, bootstrap, viaOrdered, len(srcs))
	for i := range srcs {
		require.Equal(t, want[i].Key == nil, got[i].Key == nil, "record %d: null key", i)
		require.Equal(t, want[i].Key, got[i].Key, "record %d", i)
		require.Equal(t, want[i].Value == nil, got[i].Value == nil, "record %d: null value", i)
		require.Equal(t, want[i].Value, got[i].Value, "record %d", i)
		if !srcs[i].Timestamp.IsZero() { // else the time of the produce
			require.Equal(t, want[i].Timestamp, got[i].Timestamp, "record %d", i)
		}
		require.Equal(t, want[i].Headers, got[i].Headers, "record %d", i)
	}
	require.Nil(t, got[0].Key)
	require.NotNil(t, got[1].Key)
	require.Empty(t, got[1].Key)
	require.Equal(t, at, got[2].Timestamp.UTC())
	require.Equal(t, []kafka.Header{{Key: "null"}, {Key: "empty", Value: []byte{}}, {Key: "b", Value: []byte{0xff, 0}}, {Key: "a", Value: []byte("1")}},
		got[2].Headers[:4])
}

// readAll reads the first n records of topic's partition 0.
func readAll(t *testing.T, bootstrap, topic string, n int) []*kafka.Message {
	t.Helper()
	c, err := kafka.NewConsumer(&kafka.ConfigMap{"bootstrap.servers": bootstrap, "group.id": testenv.UniqueName("read-"),
		"enable.auto.commit": false})
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.Assign([]kafka.TopicPartition{{Topic: &topic, Partition: 0, Offset: kafka.OffsetBeginning}}))
	var ms []*kafka.Message
	for len(ms) < n {
		m, err := c.ReadMessage(30 * time.Second)
		require.NoError(t, err)
		ms = append(ms, m)
	}
	return ms
}

// A produce librdkafka refuses at once returns its error, classified as Produce's are,
// and waits for no report: the next record's report is matched to the next record.
func TestOrderedRefusalWaitsForNoReport(t *testing.T) {
	bootstrap := testenv.KafkaBootstrap(t)
	topic := kafkatest.CreateTopic(t, bootstrap, 1, nil)
	p, o := orderedProducer(t, bootstrap)
	require.NoError(t, o.Produce(Destination{Topic: topic}, Source[kafka.Header]{Value: []byte("first")}, headers.Envelope{}, headers.EncodeOptions{}, "first"))
	m := report(t, p)
	require.NoError(t, m.TopicPartition.Error)
	opaque, err := o.Match(m)
	require.NoError(t, err)
	require.Equal(t, "first", opaque)

	err = o.Produce(Destination{Topic: topic, Partition: 5}, Source[kafka.Header]{Value: []byte("nowhere")}, headers.Envelope{}, headers.EncodeOptions{}, "nowhere")
	require.Error(t, err)
	class, _ := Classify(err)
	require.Equal(t, Permanent, class, "%v", err)

	require.NoError(t, o.Produce(Destination{Topic: topic}, Source[kafka.Header]{Value: []byte("second")}, headers.Envelope{}, headers.EncodeOptions{}, "second"))
	m = report(t, p)
	require.NoError(t, m.TopicPartition.Error)
	opaque, err = o.Match(m)
	require.NoError(t, err)
	require.Equal(t, "second", opaque)
}

// A report Ordered cannot have produced, or one out of produce order, is an error, not
// a guess: acknowledging the wrong record could commit one never delivered.
func TestOrderedRefusesReportsItCannotMatch(t *testing.T) {
	bootstrap := testenv.KafkaBootstrap(t)
	topic := kafkatest.CreateTopic(t, bootstrap, 1, nil)
	p, o := orderedProducer(t, bootstrap)
	_, err := o.Match(&kafka.Message{TopicPartition: kafka.TopicPartition{Topic: &topic, Partition: 0, Offset: 0}})
	require.ErrorContains(t, err, "no record produced there waiting")

	for _, v := range []string{"a", "b"} {
		require.NoError(t, o.Produce(Destination{Topic: topic}, Source[kafka.Header]{Value: []byte(v)}, headers.Envelope{}, headers.EncodeOptions{}, v))
	}
	first, second := report(t, p), report(t, p)
	_, err = o.Match(second)
	require.NoError(t, err)
	_, err = o.Match(first) // the earlier offset after the later one
	require.ErrorContains(t, err, "out of produce order")
}

// Ordered declares the few librdkafka functions and constants it calls instead of
// including rdkafka.h, which confluent-kafka-go keeps in its module: they must be the
// linked librdkafka's.
func TestOrderedDeclarationsMatchLibrdkafka(t *testing.T) {
	header := kafkatest.RdkafkaHeader(t)
	enum := regexp.MustCompile(`(?s)typedef enum rd_kafka_vtype_t \{(.*?)\}`).FindStringSubmatch(header)
	require.NotNil(t, enum)
	var vtypes []string
	for _, m := range regexp.MustCompile(`RD_KAFKA_VTYPE_(\w+)`).FindAllStringSubmatch(enum[1], -1) {
		vtypes = append(vtypes, m[1])
	}
	require.Equal(t, []string{"END", "TOPIC", "RKT", "PARTITION", "VALUE", "KEY", "OPAQUE", "MSGFLAGS", "TIMESTAMP", "HEADER", "HEADERS"}, vtypes[:11])
	require.Regexp(t, `#define RD_KAFKA_MSG_F_COPY\s+\\?\s*0x2\b`, header)
	kafkatest.RequireDeclaredIn(t, header, "ordered.go")
}
