package redrive_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/deadletter"
	"github.com/dlqops/dlq/internal/headers"
	"github.com/dlqops/dlq/internal/redrive"
	"github.com/dlqops/dlq/internal/routes"
	"github.com/dlqops/dlq/internal/store"
	"github.com/dlqops/dlq/internal/store/storetest"
	"github.com/dlqops/dlq/internal/testenv"
	"github.com/dlqops/dlq/internal/testenv/kafkatest"
	"github.com/dlqops/dlq/internal/testenv/metrictest"
)

// A route's not_retryable parks a matching record when first read, a plain name and a
// ^regex alike, with its retry count as it came, and redrives none of them, in this run
// or the next; a record of the same route whose class does not match is redriven as
// before.
func TestNotRetryableParksAtFirstSight(t *testing.T) {
	t.Parallel()
	bs := testenv.KafkaBootstrap(t)
	dlq := kafkatest.CreateTopic(t, bs, 1, nil)
	orders := kafkatest.CreateTopic(t, bs, 1, nil)
	st := storetest.New(t)
	reg := prometheus.NewRegistry()
	deadLetter := func(key, class string, retries int) *kafka.Message {
		return &kafka.Message{Key: []byte(key), Value: []byte("v-" + key), Headers: []kafka.Header{
			hdr(headers.KeyRetryCount, fmt.Sprint(retries)), hdr(headers.KeyOriginalTopic, orders), hdr(headers.KeyErrorClass, class)}}
	}
	produce(t, dlq,
		deadLetter("by-name", "org.apache.kafka.common.errors.SerializationException", 0),
		deadLetter("by-regex", "com.acme.validation.BadAmount", 2),
		deadLetter("transient", "java.net.SocketTimeoutException", 0))

	rc := route(testenv.UniqueName("not-retryable-"), dlq)
	rc.Backoff = &routes.Backoff{None: true}
	rc.NotRetryable = []string{"SerializationException", `^com\.acme\.validation\.`}
	e := startEngineWith(t, redrive.Options{Clock: time.Now, Store: st, Kafka: kcfg(t), Registry: reg}, rc)
	require.Eventually(t, func() bool {
		runNow(t, e, rc.Name)
		return metrictest.Sum(t, reg, "dlq_worker_redriven_total", nil)+metrictest.Sum(t, reg, "dlq_worker_parked_total", nil) == 3
	}, 2*time.Minute, 200*time.Millisecond)
	runNow(t, e, rc.Name) // a second run redrives nothing more

	page, err := st.List(context.Background(), store.Filter{}, "", 100)
	require.NoError(t, err)
	parked := map[int64]store.Record{} // by DLQ offset: a listing leaves keys out
	for _, r := range page.Records {
		parked[r.DLQ.Offset] = r
	}
	require.Len(t, parked, 2)
	for key, retries := range map[int64]int{0: 0, 1: 2} {
		require.Equal(t, store.StatusParked, parked[key].Status, key)
		require.Equal(t, store.ReasonNotRetryable, parked[key].Reason, key)
		require.Equal(t, retries, parked[key].RetryCount, "%d: retry count untouched", key)
	}
	require.Equal(t, 2.0, metrictest.Sum(t, reg, "dlq_worker_parked_total", map[string]string{"route": rc.Name, "reason": "not_retryable"}))

	redriven := readAll(t, orders)
	require.Len(t, redriven, 1, "only the transient failure is redriven")
	require.Equal(t, "transient", string(redriven[0].Key))
	require.Equal(t, 1, headers.DecodeOf(redriven[0].Headers).Envelope.RetryCount)
	requireConserved(t, st, dlq, rc.Group)
}

// A service marks an error deadletter.Permanent: its dead letter is parked not_retryable
// by a route without any rule, at first sight; the same service's transient failure is
// redriven.
func TestPermanentFromTheLibraryIsParkedOnEveryRoute(t *testing.T) {
	t.Parallel()
	bs := testenv.KafkaBootstrap(t)
	dlq := kafkatest.CreateTopic(t, bs, 1, nil)
	orders := kafkatest.CreateTopic(t, bs, 1, nil)
	pub, err := deadletter.NewPublisher(deadletter.PublisherConfig{BootstrapServers: bs, Topic: dlq})
	require.NoError(t, err)
	defer pub.Close(5 * time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	failed := func(key string) *kafka.Message {
		return &kafka.Message{TopicPartition: kafka.TopicPartition{Topic: &orders, Partition: 0, Offset: 7},
			Key: []byte(key), Value: []byte("{"), Timestamp: time.Now()}
	}
	_, err = pub.Publish(ctx, failed("poison"), deadletter.Permanent(fmt.Errorf("decode order: %w", errors.New("unexpected end of JSON input"))))
	require.NoError(t, err)
	_, err = pub.Publish(ctx, failed("transient"), context.DeadlineExceeded)
	require.NoError(t, err)

	st := storetest.New(t)
	reg := prometheus.NewRegistry()
	rc := route(testenv.UniqueName("permanent-"), dlq)
	rc.Backoff = &routes.Backoff{None: true}
	e := startEngineWith(t, redrive.Options{Clock: time.Now, Store: st, Kafka: kcfg(t), Registry: reg}, rc)
	require.Eventually(t, func() bool {
		runNow(t, e, rc.Name)
		return metrictest.Sum(t, reg, "dlq_worker_redriven_total", nil)+metrictest.Sum(t, reg, "dlq_worker_parked_total", nil) == 2
	}, 2*time.Minute, 200*time.Millisecond)

	page, err := st.List(context.Background(), store.Filter{}, "", 100)
	require.NoError(t, err)
	require.Len(t, page.Records, 1)
	r := page.Records[0]
	require.Equal(t, int64(0), r.DLQ.Offset, "the poison record, published first")
	require.Equal(t, []any{store.StatusParked, store.ReasonNotRetryable, 0}, []any{r.Status, r.Reason, r.RetryCount})
	require.Equal(t, "*fmt.wrapError", r.ErrorClass, "the class is the marked error's, not the mark's")
	redriven := readAll(t, orders)
	require.Len(t, redriven, 1)
	require.Equal(t, "transient", string(redriven[0].Key))
	for _, h := range redriven[0].Headers {
		require.NotEqual(t, headers.KeyErrorPermanent, h.Key)
	}
	requireConserved(t, st, dlq, rc.Group)
}
