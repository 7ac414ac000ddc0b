package redrive_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/redrive"
	"github.com/dlqops/dlq/internal/routes"
	"github.com/dlqops/dlq/internal/store/storetest"
	"github.com/dlqops/dlq/internal/testenv"
	"github.com/dlqops/dlq/internal/testenv/kafkatest"
	"github.com/dlqops/dlq/internal/testenv/metrictest"
)

// fencedRoute is a started engine with one route, a static member of its group, and a
// newer consumer that joins the group with the route's group.instance.id and client id
// clientID, so the broker fences the route.
type fencedRoute struct {
	engine *redrive.Engine
	route  routes.Config
	fatal  chan error
	reg    *prometheus.Registry
	log    *testenv.SyncBuffer
	leave  func() // closes the newer consumer
}

func fenceRoute(t *testing.T) fencedRoute {
	t.Helper()
	bs := testenv.KafkaBootstrap(t)
	dlq := kafkatest.CreateTopic(t, bs, 1, nil)
	rc := route(testenv.UniqueName("fenced-"), dlq)
	rc.WithDefaults()
	f := fencedRoute{route: rc, fatal: make(chan error, 1), reg: prometheus.NewRegistry(), log: &testenv.SyncBuffer{}}
	// The route's session outlasts the newer consumer's (6 s, the broker's least), so a newer
	// consumer that closed is gone from the group when the route asks.
	kc := kcfg(t)
	kc.Extra = map[string]string{"session.timeout.ms": "10000"}
	var err error
	f.engine, err = redrive.New([]routes.Config{rc}, redrive.Options{
		Log: zerolog.New(zerolog.MultiLevelWriter(zerolog.NewTestWriter(t), f.log)), Store: storetest.New(t), Kafka: kc,
		Registry: f.reg, ControlPoll: 100 * time.Millisecond,
		GroupInstanceID: "fence", OnFatal: func(err error) { f.fatal <- err }, ReadPath: testenv.ReadPath(),
	})
	require.NoError(t, err)
	require.NoError(t, f.engine.Start(context.Background()))
	waitAssigned(t, bs, rc.Group, 1, 1)

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
	var once sync.Once
	f.leave = func() {
		once.Do(func() {
			close(stop)
			polling.Wait()
			_ = c.Close() // a static member does not leave: the group drops it after its session
		})
	}
	t.Cleanup(f.leave)

	// At once, whoever holds the identity: not ready, saying why, and a log line.
	require.Eventually(t, func() bool {
		err := f.engine.Ready(context.Background())
		return err != nil && strings.Contains(err.Error(), "fenced: a consumer joined group "+rc.Group+" with this route's group.instance.id fence."+rc.Name)
	}, 2*time.Minute, 100*time.Millisecond, "the fenced route did not say so")
	require.Contains(t, f.log.String(), "fenced by a consumer with this route's group.instance.id")
	return f
}

// A fenced static member gets a fatal error from librdkafka, after which
// confluent-kafka-go v2.11.1's Consumer.Close never returns (confluent-kafka-go#1588).
// When the identity is free once the session has passed (as after the worker's own rejoin
// following a broker restart that outlasted its session, confluent-kafka-go#494, whose
// fatal consumer sends no heartbeat), the route stops with the fatal error, so the binary
// exits and its supervisor restarts it; it does not wait out its shutdown grace.
func TestFencedStaticMemberStopsAtOnce(t *testing.T) {
	t.Parallel()
	f := fenceRoute(t)
	f.leave() // the newer member sends no heartbeat any more, as the worker's own fatal consumer

	select {
	case err := <-f.fatal:
		require.ErrorContains(t, err, "fenced")
	case <-time.After(2 * time.Minute):
		t.Fatal("the route was never fenced by the newer member")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	err := f.engine.Stop(ctx)
	require.NotErrorIs(t, err, context.DeadlineExceeded, "the route waited out its grace closing its fenced consumer")
	require.ErrorContains(t, err, "fenced", "the route stops with its fatal error")
}

// Two workers given one group_instance_id fence each other: exiting on the fence would
// restart the fenced one, which fences the other, in a crash loop. The fenced route finds
// its identity still held once the session has passed and stops without a fatal error:
// the worker stays up, not ready, its readiness and its log naming the identity, and
// dlq_worker_errors_total{kind="identity"} counts it.
func TestDuplicateIdentityIsReportedNotFatal(t *testing.T) {
	t.Parallel()
	f := fenceRoute(t)

	var notReady error
	require.Eventually(t, func() bool {
		notReady = f.engine.Ready(context.Background())
		return notReady != nil && strings.Contains(notReady.Error(), "duplicate")
	}, 2*time.Minute, 100*time.Millisecond, "the fenced route never found its identity held: %v", notReady)
	require.ErrorContains(t, notReady, f.route.Name+": duplicate group.instance.id: fence."+f.route.Name+" is held by another live consumer of group "+f.route.Group)
	require.Contains(t, f.log.String(), "two workers share one identity")
	require.Contains(t, f.log.String(), `"group_instance_id":"fence.`+f.route.Name+`"`)
	require.Equal(t, 1.0, metrictest.Sum(t, f.reg, "dlq_worker_errors_total", map[string]string{"route": f.route.Name, "kind": "identity"}))
	select {
	case err := <-f.fatal:
		t.Fatalf("a duplicate identity ended the worker: %v", err)
	default:
	}
	require.NoError(t, f.engine.Err(), "the worker does not exit on a duplicate identity")

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	err := f.engine.Stop(ctx)
	require.NotErrorIs(t, err, context.DeadlineExceeded, "the route waited out its grace closing its fenced consumer")
	require.ErrorContains(t, err, "duplicate group.instance.id")
}
