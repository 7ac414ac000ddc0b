package deadletter_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/deadletter"
	"github.com/dlqops/dlq/internal/headers"
	"github.com/dlqops/dlq/internal/testenv"
	"github.com/dlqops/dlq/internal/testenv/kafkatest"
)

// Permanent keeps the error it marks visible to errors.Is and errors.As, through any
// wrapping on either side, and marks nothing else.
func TestPermanentWrapsTheError(t *testing.T) {
	pathErr := &fsError{"orders.json"}
	marked := fmt.Errorf("handle order: %w", deadletter.Permanent(fmt.Errorf("decode: %w", pathErr)))
	require.True(t, deadletter.IsPermanent(marked))
	require.ErrorIs(t, marked, pathErr)
	var got *fsError
	require.ErrorAs(t, marked, &got)
	require.Equal(t, "handle order: decode: bad file orders.json", marked.Error())

	require.False(t, deadletter.IsPermanent(io.EOF))
	require.False(t, deadletter.IsPermanent(context.DeadlineExceeded))
	require.False(t, deadletter.IsPermanent(nil))
	require.NoError(t, deadletter.Permanent(nil))
	require.True(t, errors.Is(deadletter.Permanent(io.EOF), io.EOF))
}

type fsError struct{ name string }

func (e *fsError) Error() string { return "bad file " + e.name }

// Publish writes a Permanent error's mark with the marked error's own class, and a later
// failure of the same record that is not permanent publishes no mark: it belongs to one
// failure.
func TestPublishWritesThePermanentMarkOfOneFailure(t *testing.T) {
	t.Parallel()
	bootstrap := testenv.KafkaBootstrap(t)
	source := kafkatest.CreateTopic(t, bootstrap, 1, nil)
	dlq := kafkatest.CreateTopic(t, bootstrap, 1, nil)
	pub := newPublisher(t, bootstrap, dlq)
	ctx := context.Background()
	failed := &kafka.Message{TopicPartition: kafka.TopicPartition{Topic: &source, Partition: 0, Offset: 3},
		Key: []byte("order-1"), Value: []byte("{"), Timestamp: now}
	_, err := pub.Publish(ctx, failed, deadletter.Permanent(classed{"validation"}))
	require.NoError(t, err)
	got := readAll(t, bootstrap, dlq, 1)[0]
	require.Contains(t, got.Headers, kafka.Header{Key: headers.KeyErrorPermanent, Value: []byte("true")})
	e := headers.DecodeOf(got.Headers).Envelope
	require.True(t, e.Permanent)
	require.Equal(t, "validation", e.ErrorClass)

	// The record, carrying the mark, fails again for a transient reason.
	again := &kafka.Message{TopicPartition: kafka.TopicPartition{Topic: &source, Partition: 0, Offset: 9},
		Key: got.Key, Value: got.Value, Timestamp: now, Headers: got.Headers}
	_, err = pub.Publish(ctx, again, context.DeadlineExceeded)
	require.NoError(t, err)
	second := readAll(t, bootstrap, dlq, 2)[1]
	for _, h := range second.Headers {
		require.NotEqual(t, headers.KeyErrorPermanent, h.Key)
	}
	require.False(t, headers.DecodeOf(second.Headers).Envelope.Permanent)
}
