package main

import (
	"context"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/headers"
	"github.com/dlqops/dlq/internal/testenv"
	"github.com/dlqops/dlq/internal/testenv/kafkatest"
)

// make fail's records are the three kinds the worker must tell apart: a first failure
// (retry count 0), an exhausted one (retry count = max_retries) and one without any
// original topic, each as the header decoder the worker uses reads it.
func TestFailWritesThreeKinds(t *testing.T) {
	bootstrap := testenv.KafkaBootstrap(t)
	dlq := kafkatest.CreateTopic(t, bootstrap, 1, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.NoError(t, run(ctx, bootstrap, "orders", dlq, kinds{retrying: 2, exhausted: 1, unroutable: 1}))

	c, err := kafka.NewConsumer(&kafka.ConfigMap{"bootstrap.servers": bootstrap, "group.id": testenv.UniqueName("fail-"),
		"auto.offset.reset": "earliest", "enable.auto.commit": false})
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.Subscribe(dlq, nil))
	var got []headers.Envelope
	var raw int
	for len(got)+raw < 4 {
		m, err := c.ReadMessage(30 * time.Second)
		require.NoError(t, err)
		if len(m.Headers) == 0 {
			raw++
			continue
		}
		d := headers.DecodeOf(m.Headers)
		require.Nil(t, d.Problem, "the worker can route it")
		require.Empty(t, d.Warnings, "the worker reads it cleanly")
		got = append(got, d.Envelope)
	}
	require.Equal(t, 1, raw, "one record without any header: unroutable")
	require.Len(t, got, 3)
	for i, want := range []int{0, 0, retriesExhausted} {
		require.Equal(t, want, got[i].RetryCount)
		require.Equal(t, "orders", got[i].OriginalTopic)
		require.Equal(t, "PaymentUnavailable", got[i].ErrorClass)
		require.False(t, got[i].LastFailure.IsZero())
	}
}
