package redrive

import (
	"testing"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/redrive/tracker"
)

// The throttle is a part of its own: given the in-flight count, it decides what starts,
// keeps the record that found no room and gives it back first.
func TestThrottleHoldsARecordUntilInFlightWorkDrains(t *testing.T) {
	th := newThrottle(2, 0, newPartitions(nil, nil, zerolog.Nop()))
	require.True(t, th.admit(nil, 0, 1))
	require.False(t, th.admit(nil, 0, 2), "max_in_flight reached")

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
	th := newThrottle(1, 0, newPartitions(nil, nil, zerolog.Nop()))
	topic := "dlq"
	th.hold(&kafka.Message{TopicPartition: kafka.TopicPartition{Topic: &topic, Partition: 3, Offset: 9}})

	th.forget([]*partition{{key: partKey{topic, 2}}})
	require.NotNil(t, th.held, "another partition's revocation")
	th.forget([]*partition{{key: partKey{topic, 3}}})
	require.Nil(t, th.held)
}

func TestThrottleRateLimit(t *testing.T) {
	th := newThrottle(100, 1, newPartitions(nil, nil, zerolog.Nop()))
	require.True(t, th.admit(nil, 0, 0))
	require.False(t, th.admit(nil, 0, 0), "one record per second, burst one")
}

// A partition takes records at most its window past the ledger's position; each ledger
// write that lands doubles the window up to max_in_flight; a gap of offsets (compaction)
// past the window does not hold a partition whose records are all in the ledger.
func TestThrottleWindowPastTheLedger(t *testing.T) {
	th := newThrottle(10000, 0, newPartitions(nil, nil, zerolog.Nop()))
	l := &ledger{windowMax: 1000}
	p := &partition{key: partKey{"dlq", 0}, trk: tracker.New(100), stored: 100, ledgered: 100, window: windowStart}
	for off := int64(100); off < 100+windowStart; off++ {
		require.True(t, th.admit(p, off, 0), "offset %d", off)
		require.NoError(t, p.trk.Add(off))
	}
	require.False(t, th.admit(p, 100+windowStart, 0), "the window is full until the ledger moves")
	require.True(t, th.admit(nil, 100+windowStart, 0), "a claimed row is in no window")

	for off := int64(100); off < 200; off++ {
		p.trk.Done(off)
	}
	l.landed(p, 200)
	require.Equal(t, int64(2*windowStart), p.window)
	require.True(t, th.admit(p, 200+2*windowStart-1, 0))
	require.False(t, th.admit(p, 200+2*windowStart, 0))
	l.landed(p, 150) // an older answer: the position does not move back
	require.Equal(t, int64(200), p.ledgered)
	require.Equal(t, int64(1000), p.window, "up to max_in_flight")
	l.landed(p, 200)
	require.Equal(t, int64(1000), p.window)

	for off := int64(200); off < 100+windowStart; off++ {
		p.trk.Done(off)
	}
	require.False(t, th.admit(p, 5000, 0), "acknowledged, not yet in the ledger")
	l.landed(p, 100+windowStart)
	require.True(t, th.admit(p, 5000, 0), "past a gap: everything taken is in the ledger")

	unknown := &partition{key: partKey{"dlq", 1}, trk: tracker.New(0), stored: -1, ledgered: -1, window: windowStart}
	require.True(t, th.admit(unknown, 1e6, 0), "no window while the ledger's position is unknown")
}
