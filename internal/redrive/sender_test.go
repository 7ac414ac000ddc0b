package redrive

import (
	"context"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/delivery"
	"github.com/dlqops/dlq/internal/headers"
	"github.com/dlqops/dlq/internal/kafkaclient"
	"github.com/dlqops/dlq/internal/kafkafast"
	"github.com/dlqops/dlq/internal/routes"
	"github.com/dlqops/dlq/internal/store/storetest"
	"github.com/dlqops/dlq/internal/testenv"
	"github.com/dlqops/dlq/internal/testenv/kafkatest"
)

// A turn's redriven records go to the sender in a batch the sender hands back once it
// produced them: the loop fills those batches again instead of growing a new one each
// turn (a turn of 256 records grew one to about 70 KiB, copying it on the way).
func TestSenderBatchesAreFilledAgain(t *testing.T) {
	bootstrap := testenv.KafkaBootstrap(t)
	target := kafkatest.CreateTopic(t, bootstrap, 1, nil)
	p := testProducer(t, kafkaclient.Config{BootstrapServers: bootstrap})
	var enc delivery.Encoder
	s := newSender(func(dest delivery.Destination, src delivery.Source[kafka.Header], env headers.Envelope, opts headers.EncodeOptions, opaque any) error {
		return delivery.Produce(&enc, p, nil, dest, src, env, opts, opaque)
	}, headers.DefaultEncodeOptions())
	ctx, cancel := context.WithCancel(context.Background())
	require.NoError(t, s.Start(ctx))
	t.Cleanup(func() {
		cancel()
		_ = s.Stop(context.Background())
	})

	dlq := "dlq"
	o := &inflight{part: &partition{key: partKey{dlq, 0}}, topic: target, target: 0,
		src: &kafka.Message{TopicPartition: kafka.TopicPartition{Topic: &dlq, Partition: 0, Offset: 7}, Value: []byte("v")}}
	env := headers.Envelope{RetryCount: 1, OriginalTopic: target, OriginalPartition: 0, OriginalOffset: -1}
	batches := map[*sendJob]bool{} // the first element of each batch handed over
	const turns = 20
	for range turns {
		for range pollBurst {
			s.queue(sendJob{o: o, env: env, now: time.Now()})
		}
		batches[&s.queued[0]] = true
		s.input() <- s.queued // as flush, waiting for the sender
		s.handed()
		for acked := 0; acked < pollBurst; {
			if m, ok := (<-p.Events()).(*kafka.Message); ok {
				require.NoError(t, m.TopicPartition.Error)
				acked++
			}
		}
	}
	require.LessOrEqual(t, len(batches), senderBatches+2, "distinct batches over %d turns", turns)
}

// An acknowledgement of no record in flight (here a record someone else produced through
// the worker's producer without an opaque; on read_path queue, a report whose id the
// route's kafkafast.Producer does not know) is not given to another record or ignored:
// it stops the worker, which then commits nothing it has not seen acknowledged.
func TestAnUnmatchedAcknowledgementStopsTheWorker(t *testing.T) {
	bootstrap := testenv.KafkaBootstrap(t)
	kc := kafkaclient.Config{BootstrapServers: bootstrap}
	dlq := kafkatest.CreateTopic(t, bootstrap, 1, nil)
	target := kafkatest.CreateTopic(t, bootstrap, 1, nil)
	w := testWorker(t, routes.Config{Name: "unmatched", Topics: []string{dlq}, Schedule: "@every 1h"}, kc, storetest.New(t))
	require.NoError(t, w.producer.Produce(&kafka.Message{TopicPartition: kafka.TopicPartition{Topic: &target, Partition: 0},
		Value: []byte("foreign")}, nil))
	deadline := time.Now().Add(30 * time.Second)
	for w.fatal == nil && time.Now().Before(deadline) {
		w.waitWork()
	}
	require.ErrorContains(t, w.fatal, "of no record in flight")
	require.ErrorContains(t, w.fatal, target)

	w.fatal = nil
	w.walk.onDelivery(kafkafast.UnknownReport{ID: 7, TopicPartition: kafka.TopicPartition{Topic: &target, Partition: 0, Offset: 1}})
	require.ErrorContains(t, w.fatal, "with id 7, which no record produced is waiting for")
	require.ErrorContains(t, w.fatal, target)
}
