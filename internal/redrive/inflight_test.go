package redrive_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/delivery"
	"github.com/dlqops/dlq/internal/headers"
	"github.com/dlqops/dlq/internal/kafkaclient"
	"github.com/dlqops/dlq/internal/routes"
	"github.com/dlqops/dlq/internal/testenv/cmalloc"
)

// A broker that stops acknowledging (a pause, a restart) leaves a route's whole window
// in librdkafka, each record copied with each of its headers: the default window must
// hold little of the worker's memory then, as that pause is the peak resident memory of
// a long run. The records are 1 KiB with our headers, as BenchmarkWorker's; the producer
// is the worker's (its settings and queue sizes for the default max_in_flight), and
// nothing listens at its broker's address, so every record stays in flight.
func TestDefaultWindowHoldsLittleInLibrdkafka(t *testing.T) {
	rc := routes.Config{Name: "r", Topics: []string{"dlq"}, Group: "g"}
	rc.WithDefaults()
	pc := delivery.ProducerConfig(kafkaclient.Config{BootstrapServers: "127.0.0.1:1"})
	kafkaclient.PipeQueues(kafka.ConfigMap{}, pc, rc.MaxInFlight)
	pc["log_level"] = 0 // nothing listens on that port: librdkafka need not say so
	p, err := kafka.NewProducer(&pc)
	require.NoError(t, err)
	defer p.Close()

	topic := "orders"
	now := time.Now().UTC()
	env := headers.Envelope{RetryCount: 1, OriginalTopic: topic, OriginalTimestamp: now, FirstFailure: now,
		LastFailure: now, ErrorClass: "java.io.IOException", ErrorMessage: "downstream unavailable"}
	value := make([]byte, 1024)
	produce := func(n int) {
		for i := range n {
			env.OriginalOffset = int64(i)
			m := &kafka.Message{TopicPartition: kafka.TopicPartition{Topic: &topic, Partition: 0},
				Key: []byte("key-" + strconv.Itoa(i)), Value: value, Timestamp: now,
				Headers: headers.To[kafka.Header](headers.Encode(nil, env, headers.DefaultEncodeOptions()))}
			require.NoError(t, p.Produce(m, nil))
		}
	}
	// Warm-up: librdkafka's per-topic and per-thread state is not the records'.
	produce(100)
	require.NoError(t, p.Purge(kafka.PurgeQueue|kafka.PurgeInFlight))

	before := cmalloc.InUse()
	produce(rc.MaxInFlight)
	held := float64(cmalloc.InUse()-before) / (1 << 20)
	t.Logf("%d records in flight hold %.1f MiB of C heap (%.2f KiB each)",
		rc.MaxInFlight, held, held*1024/float64(rc.MaxInFlight))
	require.Less(t, held, 8.0, "the default window (%d records) holds %.1f MiB in librdkafka", rc.MaxInFlight, held)
	require.NoError(t, p.Purge(kafka.PurgeQueue|kafka.PurgeInFlight))
}
