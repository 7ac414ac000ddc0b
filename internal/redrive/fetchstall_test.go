package redrive

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/config"
	"github.com/dlqops/dlq/internal/headers"
	"github.com/dlqops/dlq/internal/redrive/routes"
	"github.com/dlqops/dlq/internal/store/storetest"
	"github.com/dlqops/dlq/internal/testenv"
	"github.com/dlqops/dlq/internal/testenv/kafkatest"
	"github.com/dlqops/dlq/internal/testenv/metrictest"
)

// A partition that librdkafka stops fetching once the run resumed it (a resume lost to a
// race with the assignment's pause, librdkafka#5591; here a pause behind the worker's
// back) is resumed and sought again after fetchStallAfter, so the run reads it to its high
// watermark instead of waiting for it forever; the kick is counted and logged at WARN
// with its topic, partition and offset.
func TestRunKicksAPartitionLibrdkafkaStoppedFetching(t *testing.T) {
	const n = 2000
	bootstrap := testenv.KafkaBootstrap(t)
	dlq := kafkatest.CreateTopic(t, bootstrap, 1, nil)
	target := kafkatest.CreateTopic(t, bootstrap, 1, nil)
	kc := config.Kafka{BootstrapServers: bootstrap}
	prod := testProducer(t, kc)
	hdrs := headers.To[kafka.Header](headers.Encode(nil, headers.Envelope{RetryCount: 1, OriginalTopic: target,
		OriginalPartition: 0, OriginalOffset: -1}, headers.DefaultEncodeOptions()))
	for range n {
		require.NoError(t, prod.Produce(&kafka.Message{TopicPartition: kafka.TopicPartition{Topic: &dlq, Partition: 0},
			Value: []byte("v"), Headers: hdrs}, nil))
	}
	for acked := 0; acked < n; {
		if m, ok := (<-prod.Events()).(*kafka.Message); ok {
			require.NoError(t, m.TopicPartition.Error)
			acked++
		}
	}
	rc := routes.Config{Name: "stall", Topics: []string{dlq}, Group: testenv.UniqueName("stall-"), Backoff: &routes.Backoff{None: true}}
	w := testWorker(t, rc, kc, storetest.New(t))
	ctx, cancel := context.WithCancel(context.Background())
	for _, s := range []interface {
		Start(context.Context) error
		Stop(context.Context) error
	}{w.park, w.ledger, w.send} { // as the loop does
		require.NoError(t, s.Start(ctx))
		t.Cleanup(func() { _ = s.Stop(context.Background()) })
	}
	t.Cleanup(cancel)
	var logged bytes.Buffer
	w.log = zerolog.New(io.MultiWriter(&logged, zerolog.NewTestWriter(t)))
	tps := []kafka.TopicPartition{{Topic: &dlq, Partition: 0, Offset: 0}}
	w.assign(tps)

	reply := make(chan error, 1)
	w.startRun(ctx, reply)
	require.NotNil(t, w.run, "the run started")
	require.NoError(t, w.consumer.Pause(tps)) // librdkafka no longer fetches what the run resumed
	deadline := time.Now().Add(fetchStallAfter + time.Minute)
	var err error
	for done := false; !done; {
		select {
		case err = <-reply:
			done = true
		default:
			require.True(t, time.Now().Before(deadline), "the run never ended: %d records redriven", w.parts.byKey[partKey{dlq, 0}].counts.redriven)
			w.step(ctx)
		}
	}
	require.NoError(t, err)
	reg := prometheus.NewRegistry()
	reg.MustRegister(w.metrics.errors)
	require.Equal(t, 1.0, metrictest.Sum(t, reg, "dlq_worker_errors_total", map[string]string{"route": rc.Name, "kind": "fetch_stall"}), "kicks counted")
	var kicks []map[string]any
	for _, line := range bytes.Split(bytes.TrimSpace(logged.Bytes()), []byte("\n")) {
		var l map[string]any
		require.NoError(t, json.Unmarshal(line, &l))
		if l["message"] == "partition handed out nothing while the run reads it: resumed and sought again" {
			kicks = append(kicks, l)
		}
	}
	require.Len(t, kicks, 1, "kicks logged")
	require.Equal(t, "warn", kicks[0]["level"])
	require.Equal(t, dlq, kicks[0]["topic"])
	require.EqualValues(t, 0, kicks[0]["partition"])
	require.EqualValues(t, 0, kicks[0]["offset"], "sought to where the run starts")
	_, high, err := w.consumer.QueryWatermarkOffsets(target, 0, int(callTimeout/time.Millisecond))
	require.NoError(t, err)
	require.Equal(t, int64(n), high, "every record redriven, once")
}
