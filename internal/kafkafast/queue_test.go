package kafkafast

import (
	"bytes"
	"slices"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/testenv"
	"github.com/dlqops/dlq/internal/testenv/kafkatest"
)

// produce writes ms to topic and waits until the broker has each.
func produce(t *testing.T, bootstrap string, ms []*kafka.Message) {
	t.Helper()
	p, err := kafka.NewProducer(&kafka.ConfigMap{"bootstrap.servers": bootstrap, "enable.idempotence": true})
	require.NoError(t, err)
	defer p.Close()
	reports := make(chan kafka.Event, len(ms))
	for _, m := range ms {
		require.NoError(t, p.Produce(m, reports))
	}
	for range ms {
		select {
		case ev := <-reports:
			require.NoError(t, ev.(*kafka.Message).TopicPartition.Error)
		case <-time.After(30 * time.Second):
			t.Fatal("no delivery report within 30 s")
		}
	}
}

// consumer is a consumer of a group of its own, closed when t ends (after its queue).
func consumer(t *testing.T, bootstrap string, extra kafka.ConfigMap) *kafka.Consumer {
	t.Helper()
	cm := kafka.ConfigMap{"bootstrap.servers": bootstrap, "group.id": testenv.UniqueName("queue-"), "auto.offset.reset": "earliest",
		"enable.auto.commit": false}
	for k, v := range extra {
		cm[k] = v
	}
	c, err := kafka.NewConsumer(&cm)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// newQueue is a Queue of c, closed before c.
func newQueue(t *testing.T, c *kafka.Consumer) *Queue {
	t.Helper()
	q, err := NewQueue(c)
	require.NoError(t, err)
	t.Cleanup(q.Close)
	return q
}

// read takes n records from q, failing t if Poll hands c a record instead (a partition
// that was not routed) or 30 s pass.
func read(t *testing.T, c *kafka.Consumer, q *Queue, n int) []*kafka.Message {
	t.Helper()
	var got []*kafka.Message
	deadline := time.Now().Add(30 * time.Second)
	for len(got) < n {
		require.True(t, time.Now().Before(deadline), "%d of %d records within 30 s", len(got), n)
		if m, ok := c.Poll(0).(*kafka.Message); ok {
			t.Fatalf("Poll handed out %v: its partition was not routed to the queue", m.TopicPartition)
		}
		switch ev := q.Next(100 * time.Millisecond).(type) {
		case *kafka.Message:
			got = append(got, ev)
		case nil:
		default:
			t.Fatalf("unexpected %T %v", ev, ev)
		}
	}
	return got
}

// records is a set of records of every shape: null and empty keys, values and header
// values, several headers of one name, and a value larger than Queue's first buffer.
func records(topic string) []*kafka.Message {
	at := time.Date(2026, 5, 4, 3, 2, 1, 0, time.UTC)
	big := bytes.Repeat([]byte("0123456789abcdef"), 8<<10) // 128 KiB
	shapes := []kafka.Message{
		{Key: []byte("k"), Value: []byte("v"), Headers: []kafka.Header{{Key: "a", Value: []byte("1")}, {Key: "b", Value: nil}, {Key: "c", Value: []byte{}}, {Key: "a", Value: []byte("2")}}},
		{Key: nil, Value: nil},
		{Key: []byte{}, Value: []byte{}},
		{Key: []byte("k2"), Value: big, Headers: []kafka.Header{{Key: "x-big", Value: big[:1000]}}},
		{Key: nil, Value: []byte("no key"), Headers: []kafka.Header{{Key: "", Value: []byte("unnamed")}}},
	}
	var ms []*kafka.Message
	for p := range int32(2) {
		for i, s := range shapes {
			m := s
			m.TopicPartition = kafka.TopicPartition{Topic: &topic, Partition: p}
			m.Timestamp = at.Add(time.Duration(i) * time.Second)
			ms = append(ms, &m)
		}
	}
	return ms
}

func byPosition(ms []*kafka.Message) []*kafka.Message {
	slices.SortFunc(ms, func(a, b *kafka.Message) int {
		if a.TopicPartition.Partition != b.TopicPartition.Partition {
			return int(a.TopicPartition.Partition - b.TopicPartition.Partition)
		}
		return int(a.TopicPartition.Offset - b.TopicPartition.Offset)
	})
	return ms
}

// The records of partitions routed to a Queue come out of Next as Poll hands them out,
// field for field (null and empty keys, values and header values, header order,
// timestamps, leader epochs), and none comes through Poll.
func TestQueueReadsWhatPollReads(t *testing.T) {
	bootstrap := testenv.KafkaBootstrap(t)
	topic := kafkatest.CreateTopic(t, bootstrap, 2, nil)
	ms := records(topic)
	produce(t, bootstrap, ms)

	viaPoll := consumer(t, bootstrap, nil)
	require.NoError(t, viaPoll.Subscribe(topic, nil))
	var want []*kafka.Message
	deadline := time.Now().Add(30 * time.Second)
	for len(want) < len(ms) && time.Now().Before(deadline) {
		if m, ok := viaPoll.Poll(100).(*kafka.Message); ok {
			want = append(want, m)
		}
	}
	require.Len(t, want, len(ms))

	c := consumer(t, bootstrap, nil)
	q := newQueue(t, c)
	require.NoError(t, c.Subscribe(topic, func(c *kafka.Consumer, ev kafka.Event) error {
		if a, ok := ev.(kafka.AssignedPartitions); ok {
			require.NoError(t, q.Route(a.Partitions))
			return c.Assign(a.Partitions)
		}
		return nil
	}))
	got := read(t, c, q, len(ms))
	last := got[len(got)-1]
	require.Equal(t, byPosition(want), byPosition(got))
	require.NotNil(t, got[0].LeaderEpoch, "the broker reports leader epochs")

	// The last record read is still packed at the start of q's buffer: building its
	// message again costs one allocation for the message, one for its headers and one
	// for its bytes, whatever its number of headers.
	size := packedFixed + len(*last.TopicPartition.Topic) + len(last.Key) + len(last.Value)
	for _, h := range last.Headers {
		size += 8 + len(h.Key) + len(h.Value)
	}
	require.Equal(t, last, q.decode(q.buf[:size]))
	require.Equal(t, 3.0, testing.AllocsPerRun(100, func() { q.decode(q.buf[:size]) }), "allocations per record of %d headers", len(last.Headers))
}

// librdkafka clears a partition's route when its assignment ends and, assigned again
// without a new route, keeps its records in the partition's own queue: neither Next nor
// Poll hands them out. Routing it again hands them to Next, from the first.
func TestQueueRouteEndsWithTheAssignment(t *testing.T) {
	bootstrap := testenv.KafkaBootstrap(t)
	topic := kafkatest.CreateTopic(t, bootstrap, 1, nil)
	produce(t, bootstrap, []*kafka.Message{{TopicPartition: kafka.TopicPartition{Topic: &topic}, Value: []byte("v")}})
	c := consumer(t, bootstrap, nil)
	q := newQueue(t, c)
	tps := []kafka.TopicPartition{{Topic: &topic, Partition: 0, Offset: kafka.OffsetBeginning}}
	require.NoError(t, q.Route(tps))
	require.NoError(t, c.Assign(tps))
	read(t, c, q, 1)
	require.NoError(t, c.Unassign())
	require.NoError(t, c.Assign(tps))
	for until := time.Now().Add(3 * time.Second); time.Now().Before(until); {
		require.Nil(t, q.Next(0), "a record routed after its assignment ended")
		_, isMsg := c.Poll(100).(*kafka.Message)
		require.False(t, isMsg, "a record handed to Poll")
	}
	require.NoError(t, q.Route(tps))
	got := read(t, c, q, 1)
	require.Equal(t, kafka.Offset(0), got[0].TopicPartition.Offset)
}

// A routed partition's end comes out of Next as Poll's PartitionEOF does, and a seek
// drops what was fetched before it: the next record is the one sought, not the next
// one queued.
func TestQueueEndsPartitionsAndFollowsSeeks(t *testing.T) {
	bootstrap := testenv.KafkaBootstrap(t)
	topic := kafkatest.CreateTopic(t, bootstrap, 1, nil)
	var ms []*kafka.Message
	for i := range 10 {
		ms = append(ms, &kafka.Message{TopicPartition: kafka.TopicPartition{Topic: &topic}, Value: []byte{byte('0' + i)}})
	}
	produce(t, bootstrap, ms)
	c := consumer(t, bootstrap, kafka.ConfigMap{"enable.partition.eof": true})
	q := newQueue(t, c)
	tps := []kafka.TopicPartition{{Topic: &topic, Partition: 0, Offset: kafka.OffsetBeginning}}
	require.NoError(t, q.Route(tps))
	require.NoError(t, c.Assign(tps))
	got := read(t, c, q, 10)
	for i, m := range got {
		require.Equal(t, kafka.Offset(i), m.TopicPartition.Offset)
	}
	var end kafka.Event
	for end == nil {
		end = q.Next(5 * time.Second)
	}
	require.Equal(t, kafka.PartitionEOF{Topic: &topic, Partition: 0, Offset: 10}, end)

	require.NoError(t, c.Seek(kafka.TopicPartition{Topic: &topic, Partition: 0, Offset: 2}, 0))
	got = read(t, c, q, 2)
	require.Equal(t, kafka.Offset(2), got[0].TopicPartition.Offset)
	require.Equal(t, []byte("2"), got[0].Value)
	// Records still queued when the seek came are dropped too: read 3 of the 8 now
	// queued, seek back to 0, and the next record is offset 0.
	time.Sleep(500 * time.Millisecond) // lets the fetcher queue the rest
	read(t, c, q, 3)
	require.NoError(t, c.Seek(kafka.TopicPartition{Topic: &topic, Partition: 0, Offset: 0}, 0))
	got = read(t, c, q, 1)
	require.Equal(t, kafka.Offset(0), got[0].TopicPartition.Offset)
}
