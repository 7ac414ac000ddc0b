package delivery

import (
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/stretchr/testify/require"
)

// partitions is cluster metadata of one topic with n partitions.
type partitions int

func (n partitions) GetMetadata(topic *string, _ bool, _ int) (*kafka.Metadata, error) {
	return &kafka.Metadata{Topics: map[string]kafka.TopicMetadata{*topic: {Topic: *topic, Partitions: make([]kafka.PartitionMetadata, n)}}}, nil
}

// A record with no valid original partition and a null key goes to a partition of the
// topic chosen here, never to librdkafka's "any partition": a record's partition is known
// when it is produced.
func TestPartitionForANullKeyIsChosenAtRandom(t *testing.T) {
	topics := NewTopics(partitions(4), time.Minute, time.Second)
	seen := map[int32]int{}
	for range 400 {
		p, ok, err := topics.Partition("orders", -1, nil)
		require.NoError(t, err)
		require.True(t, ok)
		seen[p]++
	}
	require.Len(t, seen, 4, "partitions chosen: %v", seen)
	for p, n := range seen {
		require.True(t, p >= 0 && p < 4, "partition %d", p)
		require.Greater(t, n, 40, "partition %d chosen %d times of 400", p, n)
	}
	p, _, _ := topics.Partition("orders", 9, nil) // an original partition the topic lost
	require.True(t, p >= 0 && p < 4, "partition %d", p)
	p, _, _ = topics.Partition("orders", 2, nil)
	require.Equal(t, int32(2), p)
}
