package redrive_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/redrive"
	"github.com/dlqops/dlq/internal/routes"
	"github.com/dlqops/dlq/internal/store"
	"github.com/dlqops/dlq/internal/store/storetest"
	"github.com/dlqops/dlq/internal/testenv"
	"github.com/dlqops/dlq/internal/testenv/kafkatest"
)

// reportedBreaker is the route's breaker as a worker reported it to PostgreSQL.
func reportedBreaker(t *testing.T, st *store.Store, route string) store.BreakerReport {
	t.Helper()
	rcs, err := st.RouteControls(context.Background())
	require.NoError(t, err)
	for _, rc := range rcs {
		if rc.Route == route {
			return rc.Breaker
		}
	}
	return store.BreakerReport{}
}

// An operator steers a route's breaker through PostgreSQL alone. Forced open, the route
// redrives nothing: every dead letter waits as scheduled, retry count untouched, and a
// restarted worker keeps it so. Forced closed, it redrives a flood that the automatic
// breaker would stop. Given back to auto, the automatic breaker opens on the flood by
// itself. Each override is audited with its operator and reason, the worker reports the
// state for dlq-admin, and once the service recovers the backlog drains; nothing is lost.
func TestOperatorForcesTheBreaker(t *testing.T) {
	t.Parallel()
	const n = 300
	ctx := context.Background()
	bs := testenv.KafkaBootstrap(t)
	orders := kafkatest.CreateTopic(t, bs, 2, nil)
	dlq := kafkatest.CreateTopic(t, bs, 2, nil)
	st := storetest.New(t)
	svc := runOutageService(t, bs, orders, dlq)
	msgs := make([]*kafka.Message, n)
	for i := range msgs {
		msgs[i] = &kafka.Message{Key: []byte(fmt.Sprintf("k%04d", i)), Value: []byte("order"), TopicPartition: kafka.TopicPartition{Partition: kafka.PartitionAny}}
	}
	produce(t, orders, msgs...)
	require.Eventually(t, func() bool { return highWatermark(t, dlq) == n }, 2*time.Minute, 100*time.Millisecond,
		"the service dead-letters every record")

	rc := route(testenv.UniqueName("forced-"), dlq)
	rc.Backoff = &routes.Backoff{None: true}
	maxRetries := 1000
	rc.MaxRetries = &maxRetries
	rc.Breaker.OpenFor = 5 * time.Second // the drain at the end probes soon
	alice := store.Actor{Name: "alice"}
	require.NoError(t, st.RegisterRoutes(ctx, []string{rc.Name}, "dlq-worker/earlier"))
	_, err := st.SetBreakerOverride(ctx, rc.Name, store.BreakerForceOpen, "downstream maintenance", alice)
	require.NoError(t, err)
	before := highWatermark(t, orders)

	// Forced open: the runs store every dead letter as scheduled and redrive none.
	reg := prometheus.NewRegistry()
	e := startEngineWith(t, redrive.Options{Store: st, Kafka: kcfg(t), Registry: reg}, rc)
	held := store.Filter{Statuses: []store.Status{store.StatusScheduled}}
	require.Eventually(t, func() bool {
		_ = runOnce(e, rc.Name)
		c, err := st.Count(ctx, held)
		return err == nil && c == n
	}, 2*time.Minute, 100*time.Millisecond, "every dead letter waits as scheduled")
	runNow(t, e, rc.Name) // a run after every record was held
	require.Equal(t, before, highWatermark(t, orders), "a route forced open redrives nothing")
	records, err := st.ListAfter(ctx, held, 0, n)
	require.NoError(t, err)
	for _, r := range records {
		require.LessOrEqual(t, r.RetryCount, 1, "key %s: a held record's retry count is untouched", r.Key)
	}
	require.Equal(t, 1.0, gaugeValue(t, reg, "dlq_worker_route_breaker_state", rc.Name))
	require.Eventually(t, func() bool { return reportedBreaker(t, st, rc.Name).State == "forced_open" },
		time.Minute, 50*time.Millisecond, "the worker reports the forced state")

	// A restarted worker reads the override before its first run.
	require.NoError(t, e.Stop(ctx))
	reg = prometheus.NewRegistry()
	e = startEngineWith(t, redrive.Options{Store: st, Kafka: kcfg(t), Registry: reg}, rc)
	runNow(t, e, rc.Name)
	require.Equal(t, before, highWatermark(t, orders), "the override holds across a restart")
	require.Equal(t, 1.0, gaugeValue(t, reg, "dlq_worker_route_breaker_state", rc.Name))

	// Forced closed: the route redrives the flood pass after pass.
	_, err = st.SetBreakerOverride(ctx, rc.Name, store.BreakerForceClosed, "load test: let it flood", alice)
	require.NoError(t, err)
	// Each run redrives what came back since the last one, as a schedule's runs would.
	require.Eventually(t, func() bool { _ = runOnce(e, rc.Name); return highWatermark(t, orders)-before >= 3*n }, 3*time.Minute, 100*time.Millisecond,
		"a route forced closed redrives what comes back, pass after pass")
	require.Equal(t, 0.0, gaugeValue(t, reg, "dlq_worker_route_breaker_state", rc.Name))
	require.Eventually(t, func() bool { return reportedBreaker(t, st, rc.Name).State == "forced_closed" },
		time.Minute, 50*time.Millisecond)

	// Auto: the automatic breaker sees the flood and opens by itself.
	_, err = st.SetBreakerOverride(ctx, rc.Name, store.BreakerAuto, "maintenance over", alice)
	require.NoError(t, err)
	require.Eventually(t, func() bool { _ = runOnce(e, rc.Name); return reportedBreaker(t, st, rc.Name).State == "open" },
		3*time.Minute, 50*time.Millisecond, "the automatic breaker opens on the flood")
	rep := reportedBreaker(t, st, rc.Name)
	require.GreaterOrEqual(t, rep.ReturnedRatio, rc.Breaker.Ratio, "the report carries the share that came back")
	require.NotEmpty(t, rep.ReportedBy)

	audited := map[string]store.AuditEntry{}
	rows, err := st.SearchAudit(ctx, store.AuditFilter{Route: rc.Name}, 0, 100)
	require.NoError(t, err)
	for _, a := range rows {
		audited[a.Action] = a
	}
	for action, reason := range map[string]string{"breaker_force_open": "downstream maintenance",
		"breaker_force_closed": "load test: let it flood", "breaker_auto": "maintenance over"} {
		require.Equal(t, "alice", audited[action].Actor, action)
		require.Equal(t, reason, audited[action].Reason, action)
	}
	require.Contains(t, audited, "breaker_open", "the automatic open is audited by the worker")

	svc.down.Store(false) // the service recovers
	require.Eventually(t, func() bool {
		_ = runOnce(e, rc.Name)
		left, err := st.Count(ctx, held)
		return err == nil && left == 0 && svc.handledKeys() == n
	}, 5*time.Minute, 500*time.Millisecond, "the backlog drains without an operator")
	t.Logf("%s", requireConserved(t, st, dlq, rc.Group))
}
