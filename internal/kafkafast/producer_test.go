package kafkafast

import (
	"fmt"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/testenv"
	"github.com/dlqops/dlq/internal/testenv/kafkatest"
)

// producerConfig is a producer as the worker's: idempotent, its delivery reports without
// copies, no topic created by a produce.
func producerConfig(bootstrap string) kafka.ConfigMap {
	return kafka.ConfigMap{"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": true,
		"allow.auto.create.topics": false, "go.delivery.report.fields": "none", "go.events.channel.size": 1000}
}

// newProducer is a Producer configured by cm, closed when t ends.
func newProducer(t *testing.T, cm kafka.ConfigMap) *Producer {
	t.Helper()
	p, err := NewProducer(cm)
	require.NoError(t, err)
	t.Cleanup(p.Close)
	return p
}

// next waits for the next event on p's Events.
func next(t *testing.T, p *Producer) kafka.Event {
	t.Helper()
	select {
	case ev := <-p.Events():
		return ev
	case <-time.After(30 * time.Second):
		t.Fatal("no event within 30 s")
		return nil
	}
}

// report waits for the next delivery report on p's Events.
func report(t *testing.T, p *Producer) *kafka.Message {
	t.Helper()
	for {
		switch ev := next(t, p).(type) {
		case *kafka.Message:
			return ev
		case UnknownReport:
			t.Fatalf("%v", ev)
		}
	}
}

// A record leaves through Producer byte for byte as through confluent-kafka-go's Produce:
// a null key or value stays null, an empty one empty, and so do header values; the
// timestamp and the headers' order are kept. Each report comes with its record's opaque.
func TestProducerProducesWhatProduceDoes(t *testing.T) {
	bootstrap := testenv.KafkaBootstrap(t)
	viaProduce := kafkatest.CreateTopic(t, bootstrap, 1, nil)
	viaFast := kafkatest.CreateTopic(t, bootstrap, 1, nil)
	cm := producerConfig(bootstrap)
	public, err := kafka.NewProducer(&cm)
	require.NoError(t, err)
	defer public.Close()
	p := newProducer(t, producerConfig(bootstrap))
	at := time.Date(2026, 5, 4, 3, 2, 1, 0, time.UTC)
	ms := []kafka.Message{
		{Key: nil, Value: nil},
		{Key: []byte{}, Value: []byte{}, Timestamp: at},
		{Key: []byte("k"), Value: []byte("v\x00w"), Timestamp: at, Headers: []kafka.Header{
			{Key: "null", Value: nil}, {Key: "empty", Value: []byte{}}, {Key: "b", Value: []byte{0xff, 0}}, {Key: "a", Value: []byte("1")}, {Key: "a", Value: []byte("2")}}},
	}
	for i, m := range ms {
		reports := make(chan kafka.Event, 1)
		m.TopicPartition = kafka.TopicPartition{Topic: &viaProduce, Partition: 0}
		require.NoError(t, public.Produce(&m, reports))
		require.NoError(t, (<-reports).(*kafka.Message).TopicPartition.Error)
		require.NoError(t, p.Produce(viaFast, 0, m.Key, m.Value, m.Timestamp, m.Headers, i))
	}
	for i := range ms {
		m := report(t, p)
		require.NoError(t, m.TopicPartition.Error)
		require.Equal(t, i, m.Opaque)
		require.Equal(t, viaFast, *m.TopicPartition.Topic)
		require.Equal(t, kafka.Offset(i), m.TopicPartition.Offset)
	}
	require.Equal(t, 0, p.Waiting())
	want, got := readAll(t, bootstrap, viaProduce, len(ms)), readAll(t, bootstrap, viaFast, len(ms))
	for i := range ms {
		require.Equal(t, want[i].Key == nil, got[i].Key == nil, "record %d: null key", i)
		require.Equal(t, want[i].Key, got[i].Key, "record %d", i)
		require.Equal(t, want[i].Value == nil, got[i].Value == nil, "record %d: null value", i)
		require.Equal(t, want[i].Value, got[i].Value, "record %d", i)
		if !ms[i].Timestamp.IsZero() { // else the time of the produce
			require.Equal(t, want[i].Timestamp, got[i].Timestamp, "record %d", i)
		}
		require.Equal(t, want[i].Headers, got[i].Headers, "record %d", i)
	}
	require.Nil(t, got[0].Key)
	require.NotNil(t, got[1].Key)
	require.Empty(t, got[1].Key)
	require.Equal(t, at, got[2].Timestamp.UTC())
	require.Equal(t, []kafka.Header{{Key: "null"}, {Key: "empty", Value: []byte{}}, {Key: "b", Value: []byte{0xff, 0}}, {Key: "a", Value: []byte("1")}, {Key: "a", Value: []byte("2")}},
		got[2].Headers)
}

// readAll reads the first n records of topic's partition 0.
func readAll(t *testing.T, bootstrap, topic string, n int) []*kafka.Message {
	t.Helper()
	return readPartition(t, bootstrap, topic, 0, n)
}

// readPartition reads the first n records of topic's partition.
func readPartition(t *testing.T, bootstrap, topic string, partition int32, n int) []*kafka.Message {
	t.Helper()
	c, err := kafka.NewConsumer(&kafka.ConfigMap{"bootstrap.servers": bootstrap, "group.id": testenv.UniqueName("read-"),
		"enable.auto.commit": false})
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.Assign([]kafka.TopicPartition{{Topic: &topic, Partition: partition, Offset: kafka.OffsetBeginning}}))
	var ms []*kafka.Message
	for len(ms) < n {
		m, err := c.ReadMessage(30 * time.Second)
		require.NoError(t, err)
		ms = append(ms, m)
	}
	return ms
}

// Each report is matched to its record by the id it was produced with, whatever the
// order reports come in across partitions and whoever chose the partition: the record
// at each report's position is the one whose opaque the report carries.
func TestProducerMatchesReportsByID(t *testing.T) {
	bootstrap := testenv.KafkaBootstrap(t)
	const partitions, n = 3, 300
	topic := kafkatest.CreateTopic(t, bootstrap, partitions, nil)
	p := newProducer(t, producerConfig(bootstrap))
	for i := range n {
		partition := int32(i % partitions)
		if i%4 == 0 {
			partition = kafka.PartitionAny // librdkafka's partitioner chooses
		}
		v := fmt.Sprintf("record %d", i)
		require.NoError(t, p.Produce(topic, partition, nil, []byte(v), time.Time{}, nil, v))
	}
	at := map[kafka.TopicPartition]any{} // opaque by position
	counts := make([]int, partitions)
	for range n {
		m := report(t, p)
		require.NoError(t, m.TopicPartition.Error)
		at[kafka.TopicPartition{Partition: m.TopicPartition.Partition, Offset: m.TopicPartition.Offset}] = m.Opaque
		counts[m.TopicPartition.Partition]++
	}
	require.Len(t, at, n)
	require.Equal(t, 0, p.Waiting())
	for partition, count := range counts {
		for _, m := range readPartition(t, bootstrap, topic, int32(partition), count) {
			require.Equal(t, string(m.Value), at[kafka.TopicPartition{Partition: int32(partition), Offset: m.TopicPartition.Offset}],
				"the report for %v", m.TopicPartition)
		}
	}
}

// A report whose id no record waits for (here a record produced behind the Producer's
// back, with an id it never gave) comes as UnknownReport, not as anybody's report; the
// records around it are matched as ever.
func TestProducerReportsAnUnknownID(t *testing.T) {
	bootstrap := testenv.KafkaBootstrap(t)
	topic := kafkatest.CreateTopic(t, bootstrap, 1, nil)
	p := newProducer(t, producerConfig(bootstrap))
	require.NoError(t, p.Produce(topic, 0, nil, []byte("before"), time.Time{}, nil, "before"))
	require.Equal(t, "before", report(t, p).Opaque)

	require.NoError(t, p.produce(topic, 0, nil, []byte("stray"), time.Time{}, nil, 1<<40))
	var unknown UnknownReport
	for ev := next(t, p); ; ev = next(t, p) {
		if u, ok := ev.(UnknownReport); ok {
			unknown = u
			break
		}
		require.IsType(t, kafka.Error{}, ev, "%v", ev)
	}
	require.Equal(t, uint64(1<<40), unknown.ID)
	require.Equal(t, topic, *unknown.TopicPartition.Topic)
	require.Equal(t, kafka.Offset(1), unknown.TopicPartition.Offset)

	require.NoError(t, p.Produce(topic, 0, nil, []byte("after"), time.Time{}, nil, "after"))
	require.Equal(t, "after", report(t, p).Opaque)
}

// A produce librdkafka refuses at once returns its error and leaves no id waiting: no
// report will come for it.
func TestProducerRefusalWaitsForNoReport(t *testing.T) {
	bootstrap := testenv.KafkaBootstrap(t)
	topic := kafkatest.CreateTopic(t, bootstrap, 1, nil)
	p := newProducer(t, producerConfig(bootstrap))
	require.NoError(t, p.Produce(topic, 0, nil, []byte("first"), time.Time{}, nil, "first"))
	require.Equal(t, "first", report(t, p).Opaque)

	err := p.Produce(topic, 5, nil, []byte("nowhere"), time.Time{}, nil, "nowhere")
	var ke kafka.Error
	require.ErrorAs(t, err, &ke)
	require.Equal(t, kafka.ErrUnknownPartition, ke.Code(), "%v", err)
	require.Equal(t, 0, p.Waiting())
}

// A producer that reaches no broker says so on Events, as a kafka.Error, and writes
// librdkafka's lines to the log channel it was given.
func TestProducerReportsClientErrorsAndLogs(t *testing.T) {
	cm := producerConfig("127.0.0.1:1") // nothing listens on port 1
	logs := make(chan kafka.LogEvent, 1000)
	cm["go.logs.channel.enable"] = true
	cm["go.logs.channel"] = logs
	p := newProducer(t, cm)
	ev := next(t, p)
	require.IsType(t, kafka.Error{}, ev)
	require.False(t, ev.(kafka.Error).IsFatal())
	select {
	case l := <-logs:
		require.NotEmpty(t, l.Message)
		require.Contains(t, l.Name, "rdkafka#producer")
	case <-time.After(30 * time.Second):
		t.Fatal("no log line within 30 s")
	}
}

// A property librdkafka does not know, or a value of a type confluent-kafka-go does not
// take, is refused when the Producer is made.
func TestProducerRefusesABadConfiguration(t *testing.T) {
	_, err := NewProducer(kafka.ConfigMap{"bootstrap.servers": "127.0.0.1:1", "no.such.property": "x"})
	require.ErrorContains(t, err, "no.such.property")
	_, err = NewProducer(kafka.ConfigMap{"bootstrap.servers": "127.0.0.1:1", "linger.ms": 1.5})
	require.ErrorContains(t, err, "linger.ms")
	_, err = NewProducer(kafka.ConfigMap{"bootstrap.servers": "127.0.0.1:1", "go.logs.channel.enable": true})
	require.ErrorContains(t, err, "go.logs.channel")
}
