package franzredrive_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/headers"
	"github.com/dlqops/dlq/internal/prototype/franzredrive"
	"github.com/dlqops/dlq/internal/testenv"
	"github.com/dlqops/dlq/internal/testenv/kafkatest"
)

const partitions = 3

// The prototype redrives like the worker's hop: every record of the backlog lands once on
// its original topic and partition, byte for byte, with one more retry, the position it
// was read from as its redrive id and its foreign headers kept; and the group's commit is
// the high watermark of every partition, made after every acknowledgement.
func TestDrainRedrivesEachRecordOnceAndCommits(t *testing.T) {
	testenv.Integration(t)
	t.Parallel()
	bootstrap := testenv.KafkaBootstrap(t)
	target := kafkatest.CreateTopic(t, bootstrap, partitions, nil)
	dlq := kafkatest.CreateTopic(t, bootstrap, partitions, nil)
	const n = 300
	failedAt := time.Now().Add(-time.Hour).UTC().Truncate(time.Millisecond)
	p, err := kafka.NewProducer(&kafka.ConfigMap{"bootstrap.servers": bootstrap, "acks": "all", "go.delivery.reports": false,
		"go.logs.channel.enable": false})
	require.NoError(t, err)
	defer p.Close()
	for i := range n {
		env := headers.Envelope{RetryCount: 1, OriginalTopic: target, OriginalPartition: int32(i % partitions),
			OriginalOffset: int64(i), FirstFailure: failedAt, LastFailure: failedAt, ErrorClass: "java.io.IOException",
			ErrorMessage: "downstream unavailable"}
		hs := append(headers.To[kafka.Header](headers.Encode(nil, env, headers.DefaultEncodeOptions())), kafka.Header{Key: "trace", Value: []byte(fmt.Sprint(i))})
		require.NoError(t, p.Produce(&kafka.Message{TopicPartition: kafka.TopicPartition{Topic: &dlq, Partition: int32((i + 1) % partitions)},
			Key: fmt.Appendf(nil, "key-%d", i), Value: fmt.Appendf(nil, "value-%d", i), Timestamp: failedAt, Headers: hs}, nil))
	}
	require.Zero(t, p.Flush(30_000), "seeding")
	group := testenv.UniqueName("franz-")

	res, err := franzredrive.Drain(context.Background(), franzredrive.Options{Seeds: []string{bootstrap}, Group: group,
		DLQ: dlq, Encode: headers.DefaultEncodeOptions()})
	require.NoError(t, err)
	require.EqualValues(t, n, res.Records)

	admin := kafkatest.Admin(t, bootstrap)
	tps := make([]kafka.TopicPartition, partitions)
	for i := range tps {
		tps[i] = kafka.TopicPartition{Topic: &dlq, Partition: int32(i)}
	}
	committed, err := admin.ListConsumerGroupOffsets(context.Background(), []kafka.ConsumerGroupTopicPartitions{{Group: group, Partitions: tps}})
	require.NoError(t, err)
	c, err := kafka.NewConsumer(&kafka.ConfigMap{"bootstrap.servers": bootstrap, "group.id": testenv.UniqueName("check-"),
		"enable.auto.commit": false, "go.logs.channel.enable": false})
	require.NoError(t, err)
	defer c.Close()
	for _, tp := range committed.ConsumerGroupsTopicPartitions[0].Partitions {
		_, high, err := c.QueryWatermarkOffsets(dlq, tp.Partition, 10_000)
		require.NoError(t, err)
		require.EqualValues(t, high, tp.Offset, "partition %d committed at its high watermark", tp.Partition)
	}

	var assign []kafka.TopicPartition
	var total int64
	for i := range partitions {
		low, high, err := c.QueryWatermarkOffsets(target, int32(i), 10_000)
		require.NoError(t, err)
		total += high - low
		assign = append(assign, kafka.TopicPartition{Topic: &target, Partition: int32(i), Offset: kafka.Offset(low)})
	}
	require.EqualValues(t, n, total, "the target holds the backlog once")
	require.NoError(t, c.Assign(assign))
	seen := map[string]bool{}
	for len(seen) < n {
		m, err := c.ReadMessage(30 * time.Second)
		require.NoError(t, err)
		var i int
		_, err = fmt.Sscanf(string(m.Key), "key-%d", &i)
		require.NoError(t, err)
		require.False(t, seen[string(m.Key)], "record %d landed twice", i)
		seen[string(m.Key)] = true
		require.Equal(t, fmt.Sprintf("value-%d", i), string(m.Value))
		require.EqualValues(t, i%partitions, m.TopicPartition.Partition, "record %d on its original partition", i)
		require.Equal(t, failedAt, m.Timestamp.UTC())
		dec := headers.DecodeOf(m.Headers)
		require.Nil(t, dec.Problem)
		require.Equal(t, 2, dec.Envelope.RetryCount, "record %d", i)
		require.Equal(t, failedAt, dec.Envelope.LastFailure.UTC())
		require.NotNil(t, dec.Envelope.RedriveID)
		require.Equal(t, dlq, dec.Envelope.RedriveID.Topic)
		require.EqualValues(t, (i+1)%partitions, dec.Envelope.RedriveID.Partition)
		var trace []byte
		for _, h := range m.Headers {
			if h.Key == "trace" {
				trace = h.Value
			}
		}
		require.Equal(t, fmt.Sprint(i), string(trace), "record %d keeps its foreign header", i)
	}
}
