package redrive_test

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/kafkaclient"
	"github.com/dlqops/dlq/internal/redrive"
	"github.com/dlqops/dlq/internal/store"
	"github.com/dlqops/dlq/internal/store/storetest"
	"github.com/dlqops/dlq/internal/testenv"
	"github.com/dlqops/dlq/internal/testenv/kafkatest"
	"github.com/dlqops/dlq/internal/testenv/metrictest"
)

// gaugeValue returns the value of gauge name for route in reg (0 when absent).
func gaugeValue(t *testing.T, reg *prometheus.Registry, name, route string) float64 {
	t.Helper()
	return metrictest.Sum(t, reg, name, map[string]string{"route": route})
}

func runOnce(e *redrive.Engine, route string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	return e.RunNow(ctx, route)
}

// A route whose DLQ topic does not exist (a typo) makes the worker not ready, naming the
// route and the topic; its runs fail and its last-success time never moves, while a
// healthy route next to it succeeds and its last-success time moves.
func TestRouteWithoutTopicIsNotReady(t *testing.T) {
	t.Parallel()
	bs := testenv.KafkaBootstrap(t)
	st := storetest.New(t)
	reg := prometheus.NewRegistry()
	good := route(testenv.UniqueName("good-"), kafkatest.CreateTopic(t, bs, 1, nil))
	absent := testenv.UniqueName("absent-")
	typo := route(testenv.UniqueName("typo-"), absent)
	e := startEngineWith(t, redrive.Options{Store: st, Kafka: kcfg(t), Registry: reg}, good, typo)
	waitAssigned(t, bs, good.Group, 1, 1)

	err := e.Ready(context.Background())
	require.Error(t, err)
	require.Contains(t, err.Error(), typo.Name+": topics match no partition: "+absent)
	require.NotContains(t, err.Error(), good.Name)

	require.NoError(t, runOnce(e, good.Name))
	require.Positive(t, gaugeValue(t, reg, "dlq_worker_last_success_timestamp_seconds", good.Name))
	err = runOnce(e, typo.Name)
	require.ErrorIs(t, err, redrive.ErrRunIncomplete)
	require.Contains(t, err.Error(), absent)
	require.Zero(t, gaugeValue(t, reg, "dlq_worker_last_success_timestamp_seconds", typo.Name))
	runs, err := st.ListRuns(context.Background(), typo.Name, 10)
	require.NoError(t, err)
	require.Len(t, runs, 1)
	require.Equal(t, store.RunFailed, runs[0].Status)
	require.Contains(t, runs[0].Error, absent)
}

// With Kafka unreachable a run cannot read to any high watermark: it fails, the worker is
// not ready, and the last-success time does not move, so a staleness alert fires.
func TestKafkaUnreachableIsNoSuccess(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	nowhere := l.Addr().String()
	require.NoError(t, l.Close()) // nothing listens there any more
	st := storetest.New(t)
	reg := prometheus.NewRegistry()
	rc := route(testenv.UniqueName("unreachable-"), testenv.UniqueName("dlq-"))
	// A short session: closing a consumer that never reached a coordinator is bounded by it.
	kc := kafkaclient.Config{BootstrapServers: nowhere, Extra: map[string]string{"session.timeout.ms": "6000"}}
	e := startEngineWith(t, redrive.Options{Store: st, Kafka: kc, Registry: reg}, rc)

	err = runOnce(e, rc.Name)
	require.ErrorIs(t, err, redrive.ErrRunIncomplete)
	require.True(t, strings.Contains(err.Error(), "kafka"), err.Error())
	require.Zero(t, gaugeValue(t, reg, "dlq_worker_last_success_timestamp_seconds", rc.Name))
	require.Error(t, e.Ready(context.Background()))
}

// The age of the oldest due scheduled record is exported per route, and falls back to 0
// once it is redriven.
func TestOldestDueAge(t *testing.T) {
	t.Parallel()
	bs := testenv.KafkaBootstrap(t)
	clock := newClock()
	st := storetest.New(t, store.WithClock(clock.Now))
	reg := prometheus.NewRegistry()
	dlq := kafkatest.CreateTopic(t, bs, 1, nil)
	target := kafkatest.CreateTopic(t, bs, 1, nil)
	rc := faultRoute("due-", dlq) // one hour of backoff: seedMixed's second record is scheduled
	produce(t, dlq, seedMixed(10, target, clock.Now())...)
	e := startEngineWith(t, redrive.Options{Clock: clock.Now, Store: st, Kafka: kcfg(t), Registry: reg}, rc)
	waitAssigned(t, bs, rc.Group, 1, 1)
	runNow(t, e, rc.Name)
	require.Zero(t, gaugeValue(t, reg, "dlq_worker_oldest_due_age_seconds", rc.Name), "scheduled, not due yet")

	clock.Advance(3 * time.Hour) // due for two hours now
	require.Eventually(t, func() bool {
		age := gaugeValue(t, reg, "dlq_worker_oldest_due_age_seconds", rc.Name)
		return age >= 2*3600-60 && age <= 2*3600+60
	}, 40*time.Second, 200*time.Millisecond)
	runNow(t, e, rc.Name)
	require.Eventually(t, func() bool { return gaugeValue(t, reg, "dlq_worker_oldest_due_age_seconds", rc.Name) == 0 },
		40*time.Second, 200*time.Millisecond, "redriven: nothing due waits")
}

// A run that finds nothing to do writes no row of its own: a route's consecutive idle
// runs are one row, while its last-success time still moves with each. A run with work
// gets its own row with its ledger, and the idle runs after it a new idle row.
func TestIdleRunsAreOneRow(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	bs := testenv.KafkaBootstrap(t)
	st := storetest.New(t)
	reg := prometheus.NewRegistry()
	clock := newClock()
	dlq := kafkatest.CreateTopic(t, bs, 2, nil)
	orders := kafkatest.CreateTopic(t, bs, 1, nil)
	rc := route(testenv.UniqueName("idle-"), dlq)
	e := startEngineWith(t, redrive.Options{Clock: clock.Now, Store: st, Kafka: kcfg(t), Registry: reg}, rc)
	waitAssigned(t, bs, rc.Group, 1, 2)

	for range 5 {
		clock.Advance(time.Minute)
		require.NoError(t, runOnce(e, rc.Name))
		require.Equal(t, float64(clock.Now().Unix()), gaugeValue(t, reg, "dlq_worker_last_success_timestamp_seconds", rc.Name))
	}
	runs, err := st.ListRuns(ctx, rc.Name, 10)
	require.NoError(t, err)
	require.Len(t, runs, 1, "five idle runs, one row")
	require.Equal(t, store.RunSucceeded, runs[0].Status)
	require.Empty(t, runs[0].Ledger)

	produce(t, dlq, dueRecords("idle", 3, orders)...)
	require.Eventually(t, func() bool { // a run before the assignment reached the engine reads nothing
		require.NoError(t, runOnce(e, rc.Name))
		runs, err = st.ListRuns(ctx, rc.Name, 10)
		require.NoError(t, err)
		return len(runs[0].Ledger) > 0
	}, time.Minute, 100*time.Millisecond)
	work := runs[0]
	var redriven int64
	for _, l := range work.Ledger {
		redriven += l.Redriven
	}
	require.EqualValues(t, 3, redriven)
	for range 3 {
		require.NoError(t, runOnce(e, rc.Name))
	}
	runs, err = st.ListRuns(ctx, rc.Name, 10)
	require.NoError(t, err)
	require.Len(t, runs, 3, "the idle row, the run with work, a new idle row")
	require.Equal(t, work.ID, runs[1].ID)
	require.Empty(t, runs[0].Ledger)
	require.Equal(t, store.RunSucceeded, runs[0].Status)
}
