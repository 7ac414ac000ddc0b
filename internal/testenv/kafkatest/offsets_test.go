package kafkatest_test

import (
	"context"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/testenv"
	"github.com/dlqops/dlq/internal/testenv/kafkatest"
)

// The offset readers see what was produced, committed and deleted, and hand a failed
// read back to the caller instead of failing the test.
func TestOffsets(t *testing.T) {
	t.Parallel()
	bs := testenv.KafkaBootstrap(t)
	topic := kafkatest.CreateTopic(t, bs, 2, nil)
	p, err := kafka.NewProducer(&kafka.ConfigMap{"bootstrap.servers": bs})
	require.NoError(t, err)
	defer p.Close()
	acks := make(chan kafka.Event, 5)
	for i := range 5 {
		require.NoError(t, p.Produce(&kafka.Message{TopicPartition: kafka.TopicPartition{Topic: &topic, Partition: int32(i % 2)}}, acks))
	}
	for range 5 {
		require.NoError(t, (<-acks).(*kafka.Message).TopicPartition.Error)
	}

	ends, err := kafkatest.Watermarks(t, bs, topic)()
	require.NoError(t, err)
	require.Equal(t, kafkatest.Offsets{0: 3, 1: 2}, ends)
	require.EqualValues(t, 5, kafkatest.Total(ends))

	group := testenv.UniqueName("g-")
	committed := kafkatest.Committed(t, bs, topic, group, 2)
	got, err := committed()
	require.NoError(t, err)
	require.Equal(t, kafkatest.Offsets{0: 0, 1: 0}, got, "nothing committed yet")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err = kafkatest.Admin(t, bs).AlterConsumerGroupOffsets(ctx, []kafka.ConsumerGroupTopicPartitions{{Group: group,
		Partitions: []kafka.TopicPartition{{Topic: &topic, Partition: 1, Offset: 2}}}})
	require.NoError(t, err)
	got, err = committed()
	require.NoError(t, err)
	require.Equal(t, kafkatest.Offsets{0: 0, 1: 2}, got)

	kafkatest.DeleteRecords(t, bs, topic, kafkatest.Offsets{0: 2})
	c, err := kafka.NewConsumer(&kafka.ConfigMap{"bootstrap.servers": bs, "group.id": testenv.UniqueName("g-")})
	require.NoError(t, err)
	defer func() { _ = c.Close() }()
	low, high, err := c.QueryWatermarkOffsets(topic, 0, 30000)
	require.NoError(t, err)
	require.Equal(t, [2]int64{2, 3}, [2]int64{low, high}, "records below 2 deleted")

	// No broker answers there: the read says so, and the test goes on.
	_, err = kafkatest.Committed(t, "127.0.0.1:1", topic, group, 1)()
	require.Error(t, err)
}
