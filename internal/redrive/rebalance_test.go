package redrive_test

import (
	"context"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/redrive"
	"github.com/dlqops/dlq/internal/store"
	"github.com/dlqops/dlq/internal/store/storetest"
	"github.com/dlqops/dlq/internal/testenv"
	"github.com/dlqops/dlq/internal/testenv/kafkatest"
	"github.com/dlqops/dlq/internal/testenv/metrictest"
)

const lastSuccessGauge = "dlq_worker_last_success_timestamp_seconds"

// A member of the worker's group that does not answer a rebalance (it never polls) holds
// the whole group in it: the worker's partitions are revoked and nothing is assigned
// again. A run meanwhile is no success: it waits for the assignment, then fails as
// rebalancing, counted and recorded, and last-success stays put; once the group settles,
// runs succeed again. (It succeeded at once, with no partition, before.)
func TestRunDuringARebalanceIsNoSuccess(t *testing.T) {
	t.Parallel()
	bs := testenv.KafkaBootstrap(t)
	dlq := kafkatest.CreateTopic(t, bs, 2, nil)
	st := storetest.New(t)
	reg := prometheus.NewRegistry()
	rc := route(testenv.UniqueName("rebalance-"), dlq)
	logs := &syncBuffer{}
	e := startEngineLogging(t, logs, redrive.Options{Store: st, Kafka: kcfg(t), Registry: reg}, rc)
	waitAssigned(t, bs, rc.Group, 1, 2)
	require.NoError(t, runOnce(e, rc.Name))
	last := gaugeValue(t, reg, lastSuccessGauge, rc.Name)
	require.Positive(t, last)

	// stuck joins and is given a partition, but its application never polls, so it will
	// not answer the next rebalance (up to its max.poll.interval.ms); joiner starts one.
	stuck := silentMember(t, bs, rc.Group, dlq)
	waitAssigned(t, bs, rc.Group, 2, 2)
	joiner := silentMember(t, bs, rc.Group, dlq)

	// Runs succeed until the worker's partitions are revoked (its next heartbeat).
	var err error
	require.Eventually(t, func() bool {
		last = gaugeValue(t, reg, lastSuccessGauge, rc.Name)
		err = runOnce(e, rc.Name)
		return err != nil
	}, 2*time.Minute, 100*time.Millisecond, "no run failed while the group rebalanced")
	require.ErrorIs(t, err, redrive.ErrRunRebalancing)
	require.ErrorIs(t, err, redrive.ErrRunIncomplete)
	require.Equal(t, last, gaugeValue(t, reg, lastSuccessGauge, rc.Name), "last success moved with the rebalancing run")
	require.Positive(t, metrictest.Sum(t, reg, "dlq_worker_run_duration_seconds", map[string]string{"route": rc.Name, "status": "rebalancing"}))
	runs, err := st.ListRuns(context.Background(), rc.Name, 1)
	require.NoError(t, err)
	require.Len(t, runs, 1)
	require.Equal(t, store.RunFailed, runs[0].Status)
	require.Contains(t, runs[0].Error, "rebalancing")
	warned := logs.lines(t, "run fails as rebalancing")
	require.NotEmpty(t, warned)
	require.Equal(t, "warn", warned[0]["level"])

	// The silent members leave: the group settles on the worker and its runs succeed.
	require.NoError(t, stuck.Close())
	require.NoError(t, joiner.Close())
	require.Eventually(t, func() bool { return runOnce(e, rc.Name) == nil }, 2*time.Minute, 100*time.Millisecond)
	require.Greater(t, gaugeValue(t, reg, lastSuccessGauge, rc.Name), last)
}

// A member that holds no partition in a stable group (more members than partitions) has
// nothing to read: its runs succeed, like its peer's that reads the partition.
func TestStandbyMemberRunsSucceed(t *testing.T) {
	t.Parallel()
	bs := testenv.KafkaBootstrap(t)
	dlq := kafkatest.CreateTopic(t, bs, 1, nil)
	st := storetest.New(t)
	rc := route(testenv.UniqueName("standby-"), dlq)
	regs := []*prometheus.Registry{prometheus.NewRegistry(), prometheus.NewRegistry()}
	var es []*redrive.Engine
	for _, reg := range regs {
		es = append(es, startEngineWith(t, redrive.Options{Store: st, Kafka: kcfg(t), Registry: reg}, rc))
	}
	waitAssigned(t, bs, rc.Group, 2, 1)
	for i, e := range es {
		require.NoError(t, runOnce(e, rc.Name), "member %d", i)
		require.Positive(t, gaugeValue(t, regs[i], lastSuccessGauge, rc.Name), "member %d", i)
	}
}

// silentMember joins group, subscribed to topic, and never polls: it takes part in the
// first rebalance (the protocol runs in the background) but answers no later one until
// it is closed.
func silentMember(t *testing.T, bootstrap, group, topic string) *kafka.Consumer {
	t.Helper()
	c, err := kafka.NewConsumer(&kafka.ConfigMap{"bootstrap.servers": bootstrap, "group.id": group,
		"enable.auto.commit": false, "max.poll.interval.ms": 300000})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() }) // a second Close only returns an error
	require.NoError(t, c.Subscribe(topic, nil))
	return c
}
