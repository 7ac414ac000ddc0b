package deadletter_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/dlqops/dlq/deadletter"
	"github.com/dlqops/dlq/internal/headers"
	"github.com/dlqops/dlq/internal/testenv"
	"github.com/dlqops/dlq/internal/testenv/kafkatest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var now = time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)

func newPublisher(t *testing.T, bootstrap, topic string) *deadletter.Publisher {
	t.Helper()
	pub, err := deadletter.NewPublisher(deadletter.PublisherConfig{
		BootstrapServers: bootstrap, Topic: topic, Now: func() time.Time { return now },
		Kafka: kafka.ConfigMap{"message.timeout.ms": 10000},
	})
	require.NoError(t, err)
	t.Cleanup(func() { pub.Close(5 * time.Second) })
	return pub
}

func produce(t *testing.T, bootstrap string, msgs ...*kafka.Message) {
	t.Helper()
	p, err := kafka.NewProducer(&kafka.ConfigMap{"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": true})
	require.NoError(t, err)
	defer p.Close()
	delivered := make(chan kafka.Event, len(msgs))
	for _, m := range msgs {
		require.NoError(t, p.Produce(m, delivered))
	}
	for range msgs {
		m := (<-delivered).(*kafka.Message)
		require.NoError(t, m.TopicPartition.Error)
	}
}

// readAll reads n records from the start of topic's partitions.
func readAll(t *testing.T, bootstrap, topic string, n int) []*kafka.Message {
	t.Helper()
	c, err := kafka.NewConsumer(&kafka.ConfigMap{"bootstrap.servers": bootstrap, "group.id": testenv.UniqueName("r-"),
		"auto.offset.reset": "earliest", "enable.auto.commit": false})
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.Subscribe(topic, nil))
	var out []*kafka.Message
	deadline := time.Now().Add(60 * time.Second)
	for len(out) < n && time.Now().Before(deadline) {
		m, err := c.ReadMessage(time.Second)
		if err == nil {
			out = append(out, m)
		}
	}
	require.Len(t, out, n, "records in %s", topic)
	return out
}

func TestPublisherRejectsMissingTopic(t *testing.T) {
	t.Parallel()
	_, err := deadletter.NewPublisher(deadletter.PublisherConfig{
		BootstrapServers: testenv.KafkaBootstrap(t), Topic: testenv.UniqueName("missing-"),
	})
	require.ErrorContains(t, err, "DLQ topic")
	require.ErrorIs(t, err, kafka.NewError(kafka.ErrUnknownTopicOrPart, "", false))
}

// A DLQ topic deleted while the service runs: Publish reports an error (so the caller
// does not commit), and no topic is created by the attempt.
func TestPublishFailsWhenTheTopicIsGone(t *testing.T) {
	t.Parallel()
	bootstrap := testenv.KafkaBootstrap(t)
	dlq := kafkatest.CreateTopic(t, bootstrap, 1, nil)
	pub := newPublisher(t, bootstrap, dlq)
	a := kafkatest.Admin(t, bootstrap)
	_, err := a.DeleteTopics(context.Background(), []string{dlq})
	require.NoError(t, err)
	// DeleteTopics returns once the controller accepted it; the broker serves the topic
	// (and takes a produce to it) until it applies the deletion a moment later.
	require.Eventually(t, func() bool {
		md, err := a.GetMetadata(&dlq, false, 5000)
		return err == nil && md.Topics[dlq].Error.Code() == kafka.ErrUnknownTopicOrPart
	}, 30*time.Second, 20*time.Millisecond, "the broker still serves the deleted topic")
	src := "orders"
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err = pub.Publish(ctx, &kafka.Message{TopicPartition: kafka.TopicPartition{Topic: &src}, Value: []byte("x")}, errors.New("boom"))
	require.Error(t, err)
	md, err := a.GetMetadata(&dlq, false, 5000)
	require.NoError(t, err)
	require.Equal(t, kafka.ErrUnknownTopicOrPart, md.Topics[dlq].Error.Code(), "the topic was not re-created")
}

// A failed record keeps key, value, timestamp and headers; the first hop records its
// coordinates, a later hop (a redriven record failing again) carries them and the retry
// count and first-failure time forward.
func TestPublishCarriesTheEnvelopeAcrossHops(t *testing.T) {
	t.Parallel()
	bootstrap := testenv.KafkaBootstrap(t)
	source := kafkatest.CreateTopic(t, bootstrap, 1, nil)
	dlq := kafkatest.CreateTopic(t, bootstrap, 1, nil)
	pub := newPublisher(t, bootstrap, dlq)
	ts := time.Now().Add(-time.Hour).Truncate(time.Millisecond) // within the broker's 7-day retention, or it deletes the records
	foreign := []kafka.Header{{Key: "trace", Value: []byte{0, 1, 0xff}}, {Key: "trace", Value: []byte("dup")}, {Key: "nil", Value: nil}}
	first := &kafka.Message{
		TopicPartition: kafka.TopicPartition{Topic: &source, Partition: 0, Offset: 41},
		Key:            []byte("order-1"), Value: []byte{}, Timestamp: ts, Headers: foreign,
	}
	ctx := context.Background()
	_, err := pub.Publish(ctx, first, fmt.Errorf("charge: %w", context.DeadlineExceeded))
	require.NoError(t, err)

	// Second hop: the worker redrove it (retry count 3 by then) to source at offset 99.
	redriven := headers.Encode(headers.From(foreign), headers.Envelope{
		RetryCount: 3, OriginalTopic: source, OriginalPartition: 0, OriginalOffset: 41, OriginalTimestamp: ts,
		FirstFailure: now.Add(-time.Hour), LastFailure: now.Add(-time.Minute),
		RedriveID: &headers.Coordinates{Topic: dlq, Partition: 0, Offset: 0},
	}, headers.EncodeOptions{})
	second := &kafka.Message{
		TopicPartition: kafka.TopicPartition{Topic: &source, Partition: 0, Offset: 99},
		Key:            []byte("order-1"), Value: nil, Timestamp: ts, Headers: headers.To[kafka.Header](redriven),
	}
	_, err = pub.Publish(ctx, second, classed{"downstream_unavailable"})
	require.NoError(t, err)

	got := readAll(t, bootstrap, dlq, 2)
	for i, want := range []*kafka.Message{first, second} {
		require.Equal(t, want.Key, got[i].Key)
		require.Equal(t, want.Value, got[i].Value)
		require.Equal(t, want.Value == nil, got[i].Value == nil, "null value stays null")
		require.True(t, ts.Equal(got[i].Timestamp))
		require.Equal(t, foreign, got[i].Headers[:len(foreign)], "foreign headers first, byte-identical, in order")
	}
	e1 := headers.Decode(headers.From(got[0].Headers)).Envelope
	require.Equal(t, 0, e1.RetryCount)
	require.Equal(t, source, e1.OriginalTopic)
	require.Equal(t, int64(41), e1.OriginalOffset)
	require.True(t, now.Equal(e1.FirstFailure))
	require.Equal(t, "*fmt.wrapError", e1.ErrorClass)
	require.Equal(t, "charge: context deadline exceeded", e1.ErrorMessage)

	e2 := headers.Decode(headers.From(got[1].Headers)).Envelope
	require.Equal(t, 3, e2.RetryCount, "retry count carried, not reset")
	require.Equal(t, int64(41), e2.OriginalOffset, "original coordinates of the first failure")
	require.True(t, now.Add(-time.Hour).Equal(e2.FirstFailure))
	require.True(t, now.Equal(e2.LastFailure))
	require.Equal(t, "downstream_unavailable", e2.ErrorClass)
}

func TestPublishFailsWhileBrokerIsDown(t *testing.T) {
	t.Parallel()
	b := kafkatest.StartBroker(t)
	dlq := kafkatest.CreateTopic(t, b.Bootstrap(), 1, nil)
	pub := newPublisher(t, b.Bootstrap(), dlq)
	b.Stop()
	src := "orders"
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	_, err := pub.Publish(ctx, &kafka.Message{TopicPartition: kafka.TopicPartition{Topic: &src}, Value: []byte("x")}, errors.New("boom"))
	require.Error(t, err, "an unconfirmed publish is an error, so the caller does not commit")
}

// The consumer never commits past a record whose DLQ publish failed: while the DLQ's
// broker is down the committed offset stays at the poison record; once it is back the
// record is dead-lettered and consumption goes on. Every record is accounted for.
func TestConsumerNeverCommitsPastAnUnpublishedFailure(t *testing.T) {
	t.Parallel()
	bootstrap := testenv.KafkaBootstrap(t)
	source := kafkatest.CreateTopic(t, bootstrap, 1, nil)
	dlqBroker := kafkatest.StartBroker(t)
	dlq := kafkatest.CreateTopic(t, dlqBroker.Bootstrap(), 1, nil)
	pub := newPublisher(t, dlqBroker.Bootstrap(), dlq)

	const total, poison = 20, 7
	var msgs []*kafka.Message
	for i := range total {
		msgs = append(msgs, &kafka.Message{TopicPartition: kafka.TopicPartition{Topic: &source, Partition: 0}, Value: []byte(strconv.Itoa(i))})
	}
	produce(t, bootstrap, msgs...)
	dlqBroker.Stop()

	var mu sync.Mutex
	handled := map[string]int{}
	group := testenv.UniqueName("svc-")
	reg := prometheus.NewRegistry()
	c, err := deadletter.NewConsumer(deadletter.ConsumerConfig{
		BootstrapServers: bootstrap, Group: group, Topics: []string{source}, Registerer: reg,
		Kafka:          kafka.ConfigMap{"auto.commit.interval.ms": 100},
		PublishTimeout: time.Second, RetryBackoff: 100 * time.Millisecond,
	}, pub, func(_ context.Context, m *kafka.Message) error {
		mu.Lock()
		defer mu.Unlock()
		handled[string(m.Value)]++
		if string(m.Value) == strconv.Itoa(poison) {
			return errors.New("poison")
		}
		return nil
	})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()

	// The poison record is retried while the DLQ is down; nothing after it is handled.
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return handled[strconv.Itoa(poison)] >= 3
	}, 60*time.Second, 50*time.Millisecond)
	require.Eventually(t, func() bool { return committed(t, bootstrap, group, source) == poison }, 30*time.Second, 100*time.Millisecond)
	mu.Lock()
	require.Zero(t, handled[strconv.Itoa(poison+1)], "nothing past the unpublished failure")
	mu.Unlock()
	require.Equal(t, kafka.Offset(poison), committed(t, bootstrap, group, source))

	dlqBroker.Start()
	require.Eventually(t, func() bool { return committed(t, bootstrap, group, source) == total }, 90*time.Second, 200*time.Millisecond)
	cancel()
	require.NoError(t, <-done)

	mu.Lock()
	defer mu.Unlock()
	for i := range total {
		require.Positive(t, handled[strconv.Itoa(i)], "record %d handled", i)
	}
	require.Equal(t, float64(total-1), counter(t, reg, "handled"))
	require.Equal(t, float64(1), counter(t, reg, "dead_lettered"))
	require.GreaterOrEqual(t, counter(t, reg, "publish_failed"), float64(2))
	// At least once: a publish that timed out may have been delivered later too.
	dead := readAll(t, dlqBroker.Bootstrap(), dlq, 1)
	require.Equal(t, strconv.Itoa(poison), string(dead[0].Value))
}

func committed(t *testing.T, bootstrap, group, topic string) kafka.Offset {
	t.Helper()
	c, err := kafka.NewConsumer(&kafka.ConfigMap{"bootstrap.servers": bootstrap, "group.id": group})
	require.NoError(t, err)
	defer c.Close()
	tps, err := c.Committed([]kafka.TopicPartition{{Topic: &topic, Partition: 0}}, 10000)
	require.NoError(t, err)
	return tps[0].Offset
}

func counter(t *testing.T, reg *prometheus.Registry, outcome string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			if m.GetLabel()[0].GetValue() == outcome {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

type classed struct{ class string }

func (c classed) Error() string      { return "downstream is down" }
func (c classed) ErrorClass() string { return c.class }

// A publisher names its consumer group in every dead letter; a redrive's address to a
// group is not carried into the next dead letter.
func TestPublishNamesTheFailingGroup(t *testing.T) {
	t.Parallel()
	bootstrap := testenv.KafkaBootstrap(t)
	source := kafkatest.CreateTopic(t, bootstrap, 1, nil)
	dlq := kafkatest.CreateTopic(t, bootstrap, 1, nil)
	pub, err := deadletter.NewPublisher(deadletter.PublisherConfig{BootstrapServers: bootstrap, Topic: dlq, Group: "svc-a"})
	require.NoError(t, err)
	t.Cleanup(func() { pub.Close(5 * time.Second) })
	addressed := headers.Encode(nil, headers.Envelope{RetryCount: 1, OriginalTopic: source, OriginalPartition: 0, OriginalOffset: 3,
		Group: "svc-a", TargetGroup: "svc-a"}, headers.EncodeOptions{})
	failed := &kafka.Message{TopicPartition: kafka.TopicPartition{Topic: &source, Partition: 0, Offset: 7},
		Key: []byte("k"), Value: []byte("v"), Headers: headers.To[kafka.Header](addressed)}
	_, err = pub.Publish(context.Background(), failed, errors.New("boom"))
	require.NoError(t, err)

	got := readAll(t, bootstrap, dlq, 1)
	e := headers.Decode(headers.From(got[0].Headers)).Envelope
	require.Equal(t, "svc-a", e.Group)
	require.Empty(t, e.TargetGroup, "a dead letter is addressed to nobody")
	for _, h := range got[0].Headers {
		require.NotEqual(t, headers.KeyTargetGroup, h.Key)
	}
}
