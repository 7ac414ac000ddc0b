package redrive_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/redrive"
	"github.com/dlqops/dlq/internal/redrive/routes"
	"github.com/dlqops/dlq/internal/store/storetest"
	"github.com/dlqops/dlq/internal/testenv"
	"github.com/dlqops/dlq/internal/testenv/kafkatest"
)

// A static member fenced by a newer one with its group.instance.id (as after a broker
// restart that outlasted its session) gets a fatal error from librdkafka, after which
// confluent-kafka-go v2.11.1's Consumer.Close never returns (confluent-kafka-go#1588). The
// route stops with the fatal error at once instead of waiting out its shutdown grace, so
// the binary exits and its supervisor restarts it.
func TestFencedStaticMemberStopsAtOnce(t *testing.T) {
	t.Parallel()
	bs := testenv.KafkaBootstrap(t)
	dlq := kafkatest.CreateTopic(t, bs, 1, nil)
	rc := route(testenv.UniqueName("fenced-"), dlq)
	rc.WithDefaults()
	fatal := make(chan error, 1)
	e, err := redrive.New([]routes.Config{rc}, redrive.Options{
		Log: zerolog.New(zerolog.NewTestWriter(t)), Store: storetest.New(t), Kafka: kcfg(t),
		Registry: prometheus.NewRegistry(), ControlPoll: 100 * time.Millisecond,
		GroupInstanceID: "fence", OnFatal: func(err error) { fatal <- err }, ReadPath: testenv.ReadPath(),
	})
	require.NoError(t, err)
	require.NoError(t, e.Start(context.Background()))
	waitAssigned(t, bs, rc.Group, 1, 1)

	// A newer member with the route's group.instance.id takes its place in the group.
	c, err := kafka.NewConsumer(&kafka.ConfigMap{"bootstrap.servers": bs, "group.id": rc.Group,
		"group.instance.id": "fence." + rc.Name, "session.timeout.ms": 6000})
	require.NoError(t, err)
	require.NoError(t, c.Subscribe(dlq, nil))
	stop := make(chan struct{})
	var polling sync.WaitGroup
	polling.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
				c.Poll(100)
			}
		}
	})
	t.Cleanup(func() {
		close(stop)
		polling.Wait()
		_ = c.Close()
	})

	select {
	case err := <-fatal:
		require.ErrorContains(t, err, "fenced")
	case <-time.After(2 * time.Minute):
		t.Fatal("the route was never fenced by the newer member")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	err = e.Stop(ctx)
	require.NotErrorIs(t, err, context.DeadlineExceeded, "the route waited out its grace closing its fenced consumer")
	require.ErrorContains(t, err, "fenced", "the route stops with its fatal error")
}
