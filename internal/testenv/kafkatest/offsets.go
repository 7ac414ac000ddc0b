package kafkatest

import (
	"context"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/dlqops/dlq/internal/testenv"
)

// Offsets of a partition, by partition.
type Offsets = map[int32]int64

// Watermarks returns a function reading the high watermark of each partition of topic,
// through a consumer that joins no group, closed when the test ends. A read returns its
// error and the caller decides: a test across a broker restart tolerates one.
func Watermarks(t testing.TB, bootstrap, topic string) func() (Offsets, error) {
	t.Helper()
	c := offsetReader(t, bootstrap, testenv.UniqueName("hw-"))
	md, err := c.GetMetadata(&topic, false, 30000)
	if err != nil {
		t.Fatalf("metadata of %s: %v", topic, err)
	}
	parts := md.Topics[topic].Partitions
	return func() (Offsets, error) {
		out := Offsets{}
		for _, p := range parts {
			_, high, err := c.QueryWatermarkOffsets(topic, p.ID, 30000)
			if err != nil {
				return nil, err
			}
			out[p.ID] = high
		}
		return out, nil
	}
}

// Committed returns a function reading group's committed offset of partitions 0 to
// partitions-1 of topic (0 where it committed none), through a consumer of the group
// that never joins it, closed when the test ends. A read returns its error and the
// caller decides.
func Committed(t testing.TB, bootstrap, topic, group string, partitions int) func() (Offsets, error) {
	t.Helper()
	c := offsetReader(t, bootstrap, group)
	tps := make([]kafka.TopicPartition, partitions)
	for i := range tps {
		tps[i] = kafka.TopicPartition{Topic: &topic, Partition: int32(i)}
	}
	return func() (Offsets, error) {
		got, err := c.Committed(tps, 10000)
		if err != nil {
			return nil, err
		}
		out := Offsets{}
		for _, tp := range got {
			out[tp.Partition] = max(0, int64(tp.Offset))
		}
		return out, nil
	}
}

func offsetReader(t testing.TB, bootstrap, group string) *kafka.Consumer {
	t.Helper()
	c, err := kafka.NewConsumer(&kafka.ConfigMap{"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": false})
	if err != nil {
		t.Fatalf("kafka consumer: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// Total is the sum of offsets: a topic's record count from its watermarks (when nothing
// was deleted), or how many records a group committed.
func Total(offsets Offsets) int64 {
	var n int64
	for _, v := range offsets {
		n += v
	}
	return n
}

// DeleteRecords deletes the records of each partition p of topic below below[p], as
// retention would.
func DeleteRecords(t testing.TB, bootstrap, topic string, below Offsets) {
	t.Helper()
	var tps []kafka.TopicPartition
	for p, off := range below {
		tps = append(tps, kafka.TopicPartition{Topic: &topic, Partition: p, Offset: kafka.Offset(off)})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := Admin(t, bootstrap).DeleteRecords(ctx, tps)
	if err != nil {
		t.Fatalf("delete records of %s: %v", topic, err)
	}
	for _, r := range res.DeleteRecordsResults {
		if r.TopicPartition.Error != nil {
			t.Fatalf("delete records of %s: %v", topic, r.TopicPartition.Error)
		}
	}
}
