package redrive

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/testenv"
	"github.com/dlqops/dlq/internal/testenv/kafkatest"
)

// A zombie thawed with a transaction open may reach its commit before librdkafka
// notices the session it lost: the broker refuses the transaction's offsets because the
// group's generation moved on. The route stops with the transaction aborted, and says
// it was fenced, as it does when the group takes its partitions away first.
func TestExactlyOnceStaleGenerationIsFenced(t *testing.T) {
	t.Parallel()
	bs := testenv.KafkaBootstrap(t)
	topic := kafkatest.CreateTopic(t, bs, 2, nil)
	group := testenv.UniqueName("eos-stale-")
	join := func() (*kafka.Consumer, *kafka.ConsumerGroupMetadata) {
		c, err := kafka.NewConsumer(&kafka.ConfigMap{"bootstrap.servers": bs, "group.id": group, "enable.auto.commit": false})
		require.NoError(t, err)
		t.Cleanup(func() { _ = c.Close() })
		require.NoError(t, c.Subscribe(topic, nil))
		require.Eventually(t, func() bool {
			c.Poll(100)
			a, err := c.Assignment()
			return err == nil && len(a) > 0
		}, 2*time.Minute, 10*time.Millisecond, "the consumer never got an assignment")
		meta, err := c.GetConsumerGroupMetadata()
		require.NoError(t, err)
		return c, meta
	}
	zombie, stale := join()
	require.NoError(t, zombie.Close()) // the group forgets its member, as when its session expires

	p, err := openTxnProducer(kafka.ConfigMap{"bootstrap.servers": bs}, txnID(testenv.UniqueName("eos-stale-"), "route"))
	require.NoError(t, err)
	defer p.Close()
	join() // another member: the group's next generation
	require.NoError(t, p.BeginTransaction())
	ctx, cancel := context.WithTimeout(context.Background(), txnCallTimeout)
	defer cancel()
	err = p.SendOffsetsToTransaction(ctx, []kafka.TopicPartition{{Topic: &topic, Partition: 0, Offset: 1}}, stale)
	require.Error(t, err, "the broker takes offsets from a member it no longer knows")
	var ke kafka.Error
	require.ErrorAs(t, err, &ke)
	t.Logf("offsets from the stale member: %v (code %d, abortable %t, retriable %t)", ke, ke.Code(), ke.TxnRequiresAbort(), ke.IsRetriable())

	x := &txn{loopState: &loopState{}, producer: p, open: true, log: zerolog.Nop(),
		failed: prometheus.NewCounter(prometheus.CounterOpts{Name: "failed"}), fenced: prometheus.NewCounter(prometheus.CounterOpts{Name: "fenced"})}
	x.fail(err)
	require.Error(t, x.fatal)
	require.Contains(t, strings.ToLower(x.fatal.Error()), "fenced", "the route says the group fenced it: %v", x.fatal)
	require.False(t, x.open, "the transaction is aborted")
	require.Equal(t, 1.0, count(t, x.fenced), "counted as fenced")
	require.Zero(t, count(t, x.failed), "and not as failed")
}

// count is c's value.
func count(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	var m dto.Metric
	require.NoError(t, c.Write(&m))
	return m.GetCounter().GetValue()
}
