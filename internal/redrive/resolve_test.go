package redrive_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/redrive"
	"github.com/dlqops/dlq/internal/redrive/routes"
	"github.com/dlqops/dlq/internal/store"
	"github.com/dlqops/dlq/internal/store/storetest"
	"github.com/dlqops/dlq/internal/testenv"
	"github.com/dlqops/dlq/internal/testenv/kafkatest"
)

// sharePointer is a share group's dead letter as the broker writes it by default: the six
// __dlq.errors headers, no key, no value.
func sharePointer(dlqPartition int32, topic string, partition int32, offset int64) *kafka.Message {
	return &kafka.Message{TopicPartition: kafka.TopicPartition{Partition: dlqPartition}, Headers: []kafka.Header{
		hdr("__dlq.errors.topic", topic), hdr("__dlq.errors.partition", strconv.Itoa(int(partition))),
		hdr("__dlq.errors.offset", strconv.FormatInt(offset, 10)), hdr("__dlq.errors.group", "g"),
		hdr("__dlq.errors.delivery.count", "1"), hdr("__dlq.errors.message", "Offset rejected by client.")}}
}

// A backlog of pointers whose consecutive records name different source partitions
// (each DLQ partition alternates between two source partitions, and the worker reads
// both DLQ partitions at once) is resolved from records read ahead per source partition:
// the fetcher starts each source partition once instead of once per pointer, and every
// pointer is redriven from its source record, accounted for by the audit.
func TestSharePointersInterleavingSourcePartitions(t *testing.T) {
	t.Parallel()
	const n, sourceParts = 6000, 4
	bs := testenv.KafkaBootstrap(t)
	source := kafkatest.CreateTopic(t, bs, sourceParts, nil)
	dlq := kafkatest.CreateTopic(t, bs, 2, nil)
	records := make([]*kafka.Message, n)
	pointers := make([]*kafka.Message, n)
	next := make([]int64, sourceParts)
	for i := range n {
		dlqPart := int32(i % 2)
		part := dlqPart + 2*int32(i/2%2) // DLQ 0 → sources 0, 2, 0, 2…; DLQ 1 → 1, 3, 1, 3…
		records[i] = sourceRecord(source, part, "k"+strconv.Itoa(i), []byte("v"+strconv.Itoa(i)), time.Now(), hdr("traceparent", strconv.Itoa(i)))
		pointers[i] = sharePointer(dlqPart, source, part, next[part])
		next[part]++
	}
	produce(t, source, records...)
	produce(t, dlq, pointers...)

	st := storetest.New(t)
	reg := prometheus.NewRegistry()
	rc := route(testenv.UniqueName("share-interleaved-"), dlq)
	rc.Backoff = &routes.Backoff{None: true}
	e := startEngineWith(t, redrive.Options{Store: st, Kafka: kcfg(t), Registry: reg}, rc)
	waitAssigned(t, bs, rc.Group, 1, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	require.NoError(t, e.RunNow(ctx, rc.Name), "one run reads the whole backlog")

	require.Equal(t, float64(n), counterSum(t, reg, "dlq_worker_redriven_total", nil))
	seeks := counterSum(t, reg, "dlq_worker_source_seeks_total", nil)
	require.GreaterOrEqual(t, seeks, float64(sourceParts), "each source partition is started at least once")
	require.LessOrEqual(t, seeks, float64(2*sourceParts), "source partitions re-started per pointer")
	parked, err := st.Count(context.Background(), store.Filter{})
	require.NoError(t, err)
	require.Zero(t, parked)
	rep := requireConserved(t, st, dlq, rc.Group)
	require.Equal(t, n, rep.Checked)
	require.Equal(t, n, rep.OnTarget)
	requireRedrivenAsSource(t, source, records)
}
