package redrive

import (
	"testing"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
)

// The throttle is a part of its own: given the in-flight count, it decides what starts,
// keeps the record that found no room and gives it back first.
func TestThrottleHoldsARecordUntilInFlightWorkDrains(t *testing.T) {
	th := newThrottle(2, 0, newPartitions(nil, zerolog.Nop()))
	require.True(t, th.admit(1))
	require.False(t, th.admit(2), "max_in_flight reached")

	topic := "dlq"
	m := &kafka.Message{TopicPartition: kafka.TopicPartition{Topic: &topic, Partition: 0, Offset: 5}}
	th.hold(m)
	require.True(t, th.holdPolling(), "a new throttle stops polling")
	require.Nil(t, th.takeHeld(2), "no room yet")
	th.release(1)
	require.True(t, th.on, "the held record keeps the throttle on")

	require.Same(t, m, th.takeHeld(1))
	require.Nil(t, th.takeHeld(0), "given back once")
	th.release(1)
	require.False(t, th.on)
	require.False(t, th.holdPolling())
}

func TestThrottleForgetsTheRecordOfARevokedPartition(t *testing.T) {
	th := newThrottle(1, 0, newPartitions(nil, zerolog.Nop()))
	topic := "dlq"
	th.hold(&kafka.Message{TopicPartition: kafka.TopicPartition{Topic: &topic, Partition: 3, Offset: 9}})

	th.forget([]*partition{{key: partKey{topic, 2}}})
	require.NotNil(t, th.held, "another partition's revocation")
	th.forget([]*partition{{key: partKey{topic, 3}}})
	require.Nil(t, th.held)
}

func TestThrottleRateLimit(t *testing.T) {
	th := newThrottle(100, 1, newPartitions(nil, zerolog.Nop()))
	require.True(t, th.admit(0))
	require.False(t, th.admit(0), "one record per second, burst one")
}
