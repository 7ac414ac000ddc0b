package redrive_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/headers"
	"github.com/dlqops/dlq/internal/redrive"
	"github.com/dlqops/dlq/internal/routes"
	"github.com/dlqops/dlq/internal/store"
	"github.com/dlqops/dlq/internal/store/storetest"
	"github.com/dlqops/dlq/internal/testenv"
	"github.com/dlqops/dlq/internal/testenv/kafkatest"
	"github.com/dlqops/dlq/internal/testenv/metrictest"
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

	require.Equal(t, float64(n), metrictest.Sum(t, reg, "dlq_worker_redriven_total", nil))
	seeks := metrictest.Sum(t, reg, "dlq_worker_source_seeks_total", nil)
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

// headroomSeries returns dlq_worker_source_headroom_records of route by source
// "topic/partition".
func headroomSeries(t *testing.T, reg *prometheus.Registry, route string) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	for _, s := range metrictest.Samples(t, reg, "dlq_worker_source_headroom_records", map[string]string{"route": route}) {
		out[s.Labels["topic"]+"/"+s.Labels["partition"]] = s.Value
	}
	return out
}

// The headroom gauge follows the oldest unresolved pointer of each source partition, not
// the last one resolved: with pointers waiting in the DLQ and no run, it shows each
// source partition's oldest pointer against its log start; deleting source records
// (kafka-delete-records) shrinks it, and a WARN line names the partition, the offset and
// the headroom left; once a run resolved every pointer the series are gone.
func TestSourceHeadroomFollowsTheOldestPointer(t *testing.T) {
	t.Parallel()
	bs := testenv.KafkaBootstrap(t)
	source := kafkatest.CreateTopic(t, bs, 2, nil)
	dlq := kafkatest.CreateTopic(t, bs, 2, nil)
	var records, pointers []*kafka.Message
	for i := range 100 {
		for part := range int32(2) {
			records = append(records, sourceRecord(source, part, "k"+strconv.Itoa(i), []byte("v"), time.Now()))
		}
	}
	for i := range int64(10) {
		pointers = append(pointers, sharePointer(0, source, 0, 50+i), sharePointer(1, source, 1, 80+i))
	}
	produce(t, source, records...)
	produce(t, dlq, pointers...)

	st := storetest.New(t)
	reg := prometheus.NewRegistry()
	rc := route(testenv.UniqueName("headroom-"), dlq)
	rc.Backoff = &routes.Backoff{None: true}
	logs := &syncBuffer{}
	e := startEngineLogging(t, logs, redrive.Options{Store: st, Kafka: kcfg(t), Registry: reg,
		HeadroomProbe: 100 * time.Millisecond}, rc)
	p0, p1 := source+"/0", source+"/1"
	require.Eventually(t, func() bool {
		h := headroomSeries(t, reg, rc.Name)
		return h[p0] == 50 && h[p1] == 80
	}, time.Minute, 50*time.Millisecond, "the oldest pointers, 50 and 80 records above a log start of 0")
	const warning = "the oldest unresolved share-group dead letter is close to its source's log start"
	require.Empty(t, logs.lines(t, warning), "no warning while the source has deleted nothing")

	kafkatest.DeleteRecords(t, bs, source, kafkatest.Offsets{0: 48})
	require.Eventually(t, func() bool {
		h := headroomSeries(t, reg, rc.Name)
		return h[p0] == 2 && h[p1] == 80
	}, time.Minute, 50*time.Millisecond, "2 records left before the oldest pointer of partition 0 expires")
	require.Eventually(t, func() bool { return len(logs.lines(t, warning)) > 0 }, time.Minute, 50*time.Millisecond)
	w := logs.lines(t, warning)[0]
	require.Equal(t, "warn", w["level"])
	require.Equal(t, []any{source, 0.0, 50.0, 48.0, 2.0, dlq, 0.0, 0.0},
		[]any{w["topic"], w["partition"], w["offset"], w["source_log_start"], w["headroom_records"], w["dlq_topic"], w["dlq_partition"], w["dlq_offset"]})

	waitAssigned(t, bs, rc.Group, 1, 2)
	runNow(t, e, rc.Name)
	require.Equal(t, 20.0, metrictest.Sum(t, reg, "dlq_worker_redriven_total", nil))
	require.Eventually(t, func() bool { return len(headroomSeries(t, reg, rc.Name)) == 0 },
		time.Minute, 50*time.Millisecond, "no unresolved pointer left: no headroom series")
	requireConserved(t, st, dlq, rc.Group)
}

// The header warnings of the source record a share group's dead letter points at are
// counted and logged like those of a record read from the DLQ itself: a source record
// carrying our retry count twice is decided last-wins, counted once as duplicate_key,
// and logged once with the dead letter's DLQ coordinates.
func TestSharePointerSourceHeaderWarnings(t *testing.T) {
	t.Parallel()
	bs := testenv.KafkaBootstrap(t)
	source := kafkatest.CreateTopic(t, bs, 1, nil)
	dlq := kafkatest.CreateTopic(t, bs, 1, nil)
	produce(t, source, sourceRecord(source, 0, "k", []byte("v"), time.Now(),
		hdr(headers.KeyRetryCount, "1"), hdr(headers.KeyRetryCount, "1")))
	produce(t, dlq, sharePointer(0, source, 0, 0))

	st := storetest.New(t)
	reg := prometheus.NewRegistry()
	rc := route(testenv.UniqueName("share-warned-"), dlq)
	rc.Backoff = &routes.Backoff{None: true}
	logs := &syncBuffer{}
	e := startEngineLogging(t, logs, redrive.Options{Store: st, Kafka: kcfg(t), Registry: reg}, rc)
	require.Eventually(t, func() bool {
		runNow(t, e, rc.Name)
		return metrictest.Sum(t, reg, "dlq_worker_redriven_total", nil) == 1
	}, time.Minute, 200*time.Millisecond)

	out := readAll(t, source)
	require.Len(t, out, 2, "the source record and its redrive")
	require.Equal(t, 2, headers.DecodeOf(out[1].Headers).Envelope.RetryCount, "the last retry count (1) wins, plus this redrive")
	require.Equal(t, 1.0, metrictest.Sum(t, reg, "dlq_worker_header_warnings_total", map[string]string{"route": rc.Name, "kind": "duplicate_key"}))
	require.Equal(t, 1.0, metrictest.Sum(t, reg, "dlq_worker_header_warnings_total", nil), "no other warning")
	warned := logs.lines(t, "header fields left unknown")
	require.Len(t, warned, 1)
	require.Equal(t, "warn", warned[0]["level"])
	require.Equal(t, []any{dlq, 0.0, 0.0}, []any{warned[0]["topic"], warned[0]["partition"], warned[0]["offset"]})
	require.Equal(t, []any{headers.KeyRetryCount + ": duplicate key, the last occurrence wins"}, warned[0]["warnings"])
	requireConserved(t, st, dlq, rc.Group)
}
