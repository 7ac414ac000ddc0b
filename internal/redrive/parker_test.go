package redrive

import (
	"context"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/headers"
	"github.com/dlqops/dlq/internal/redrive/tracker"
	"github.com/dlqops/dlq/internal/store"
	"github.com/dlqops/dlq/internal/testenv/metrictest"
)

// The parker is a part of its own: a stored batch gives back every record it held, done
// on its partition and counted, except on a revoked partition (its new owner reads them
// again) and after a failed store (nothing done, nothing committed).
func TestParkerAccountsForEveryStoredRecord(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := newMetrics(reg)
	require.NoError(t, err)
	pk := newParker(nil, "r", zerolog.Nop(), newHealth(zerolog.Nop(), "r", m.errors, nil), m)
	live := &partition{key: partKey{"dlq", 0}, trk: tracker.New(0)}
	gone := &partition{key: partKey{"dlq", 1}, trk: tracker.New(0), gone: true}
	read := func(p *partition, off int64) *kafka.Message {
		require.NoError(t, p.trk.Add(off))
		return &kafka.Message{TopicPartition: kafka.TopicPartition{Topic: &p.key.topic, Partition: p.key.partition, Offset: kafka.Offset(off)}}
	}
	pk.enqueue(live, read(live, 0), headers.Envelope{}, decision{act: actSchedule, reason: store.ReasonBackoff, due: time.Now()})
	pk.enqueue(live, read(live, 1), headers.Envelope{}, decision{act: actPark, reason: store.ReasonExhausted})
	pk.enqueue(gone, read(gone, 0), headers.Envelope{}, decision{act: actPark, reason: store.ReasonExhausted})
	require.False(t, pk.idle())
	items := pk.batch
	pk.batch, pk.storing = nil, 2

	require.Equal(t, 0, pk.done(&storeBatch{items: items, err: context.Canceled}), "a failed batch finishes nothing")
	require.Equal(t, int64(0), live.trk.Watermark())
	require.Equal(t, 3, pk.done(&storeBatch{items: items}))
	require.True(t, pk.idle())

	require.Equal(t, int64(2), live.trk.Watermark(), "both records of the live partition are done")
	require.Equal(t, counts{scheduled: 1, parked: 1}, live.counts)
	require.Equal(t, counts{}, gone.counts, "a revoked partition's records are not counted")
	require.Equal(t, 1.0, metrictest.Sum(t, reg, "dlq_worker_scheduled_total", map[string]string{"route": "r"}))
	require.Equal(t, 1.0, metrictest.Sum(t, reg, "dlq_worker_parked_total", map[string]string{"route": "r", "reason": string(store.ReasonExhausted)}))
}
