package main

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	segmentio "github.com/segmentio/kafka-go"
	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/testenv"
	"github.com/dlqops/dlq/internal/testenv/kafkatest"
)

const (
	testRecords    = 3000
	testPartitions = 3
)

// With acks=all the re-created peer moves every record of the backlog to the target once,
// keeping key, value and headers and adding the peer's missing retry headers, and its
// group commits every partition to its high watermark.
func TestMovesEveryRecordWithAcksAll(t *testing.T) {
	bs := testenv.KafkaBootstrap(t)
	from, to := seed(t, bs), kafkatest.CreateTopic(t, bs, testPartitions, nil)
	group := testenv.UniqueName("peer-")
	res, err := pipe(context.Background(), settings{bootstrap: bs, group: group, from: from, to: to,
		acks: segmentio.RequireAll, concurrency: 300, batchSize: 100, batchTimeout: 10 * time.Millisecond})
	require.NoError(t, err)
	require.EqualValues(t, testRecords, res.Records)
	require.EqualValues(t, testRecords, res.Written)
	require.EqualValues(t, testRecords, res.Landed)
	require.Positive(t, res.ElapsedMs)
	require.Positive(t, res.PeakMiB)

	got := consumeAll(t, bs, to)
	require.Len(t, got, testRecords, "each record once")
	for i := range testRecords {
		m, ok := got["key-"+strconv.Itoa(i)]
		require.True(t, ok, "record %d missing", i)
		require.Equal(t, "value-"+strconv.Itoa(i), string(m.Value))
		require.Equal(t, map[string]string{"x-retry-count": "2", "x-retry-attempt-count": "1", "x-produce-time": "0"}, headerMap(m))
	}
	hw, err := kafkatest.Watermarks(t, bs, from)()
	require.NoError(t, err)
	committed, err := kafkatest.Committed(t, bs, from, group, testPartitions)()
	require.NoError(t, err)
	require.Equal(t, hw, committed)
}

// In the peer's own mode (acks=0) it reads every record and writes each without an error,
// and what it reports as landed is what the target holds.
func TestDefaultModeReportsWhatLanded(t *testing.T) {
	bs := testenv.KafkaBootstrap(t)
	from, to := seed(t, bs), kafkatest.CreateTopic(t, bs, testPartitions, nil)
	res, err := pipe(context.Background(), settings{bootstrap: bs, group: testenv.UniqueName("peer-"), from: from, to: to,
		acks: segmentio.RequireNone, concurrency: 300, batchSize: 100, batchTimeout: 10 * time.Millisecond})
	require.NoError(t, err)
	require.EqualValues(t, testRecords, res.Records)
	require.EqualValues(t, testRecords, res.Written)
	require.LessOrEqual(t, res.Landed, res.Written)
	require.Len(t, consumeAll(t, bs, to), int(res.Landed))
}

// seed creates a topic holding testRecords records, key-i and value-i, each with an
// x-retry-count header of 2, and returns its name.
func seed(t *testing.T, bs string) string {
	t.Helper()
	topic := kafkatest.CreateTopic(t, bs, testPartitions, nil)
	p, err := kafka.NewProducer(&kafka.ConfigMap{"bootstrap.servers": bs, "acks": "all", "linger.ms": 10,
		"go.logs.channel.enable": false})
	require.NoError(t, err)
	defer p.Close()
	at := time.Now().Add(-time.Hour) // recent: the broker's retention keeps it
	for i := range testRecords {
		require.NoError(t, p.Produce(&kafka.Message{
			TopicPartition: kafka.TopicPartition{Topic: &topic, Partition: int32(i % testPartitions)},
			Key:            []byte("key-" + strconv.Itoa(i)), Value: []byte("value-" + strconv.Itoa(i)), Timestamp: at,
			Headers: []kafka.Header{{Key: "x-retry-count", Value: []byte("2")}},
		}, nil))
	}
	for acked := 0; acked < testRecords; {
		if m, ok := (<-p.Events()).(*kafka.Message); ok {
			require.NoError(t, m.TopicPartition.Error)
			acked++
		}
	}
	return topic
}

// consumeAll reads topic from the start to its high watermarks and returns its records by key,
// failing t when the read stops making progress.
func consumeAll(t *testing.T, bs, topic string) map[string]*kafka.Message {
	t.Helper()
	hw, err := kafkatest.Watermarks(t, bs, topic)()
	require.NoError(t, err)
	c, err := kafka.NewConsumer(&kafka.ConfigMap{"bootstrap.servers": bs, "group.id": testenv.UniqueName("read-"),
		"enable.auto.commit": false, "go.logs.channel.enable": false})
	require.NoError(t, err)
	defer func() { _ = c.Close() }()
	var tps []kafka.TopicPartition
	var want int64
	for p, high := range hw {
		tps = append(tps, kafka.TopicPartition{Topic: &topic, Partition: p, Offset: kafka.OffsetBeginning})
		want += high
	}
	require.NoError(t, c.Assign(tps))
	out := map[string]*kafka.Message{}
	// A stall, not a slow machine, fails the read: the deadline moves with every record,
	// since a loaded host can take minutes for the whole topic while never stopping.
	const stall = 2 * time.Minute
	deadline := time.Now().Add(stall)
	for read := int64(0); read < want; {
		require.False(t, time.Now().After(deadline), "read %d of %d records of %s, then nothing for %s", read, want, topic, stall)
		m, err := c.ReadMessage(time.Second)
		if err != nil {
			continue
		}
		read++
		deadline = time.Now().Add(stall)
		require.NotContains(t, out, string(m.Key), "a duplicate")
		out[string(m.Key)] = m
	}
	return out
}

func headerMap(m *kafka.Message) map[string]string {
	out := map[string]string{}
	for _, h := range m.Headers {
		out[h.Key] = string(h.Value)
	}
	return out
}
