package redrive_test

import (
	"context"
	"maps"
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
	"github.com/dlqops/dlq/internal/testenv/metrictest"
)

// A worker killed after it wrote a position to the ledger and before librdkafka
// committed it leaves the committed offset behind the ledger. Every record below the
// ledger's position is done, so the next worker resumes there: it counts and records the
// range, commits the ledger's position, and redrives none of it again. (It read the range
// again before, and every record in it reached the target twice.)
func TestCommitBehindTheLedgerResumesAtTheLedger(t *testing.T) {
	t.Parallel()
	const n, behind = 40, 15 // per partition: 20 redriven, committed moved back to 5
	bs, st, dlq, target, rc, committed := firstLife(t, "behind-", n)
	moveGroupTo(t, bs, rc.Group, dlq, map[int32]int64{0: n/2 - behind, 1: n/2 - behind})

	reg := prometheus.NewRegistry()
	logs := &syncBuffer{}
	e := startEngineLogging(t, logs, redrive.Options{Store: st, Kafka: kcfg(t), Registry: reg}, rc)
	waitAssigned(t, bs, rc.Group, 1, 2)
	require.Eventually(t, func() bool {
		return metrictest.Sum(t, reg, "dlq_worker_offset_resets_total", map[string]string{"cause": "backward"}) == 2
	}, 30*time.Second, 20*time.Millisecond, "the committed offsets behind the ledger are seen at assignment")
	// The gap is counted before the assignment ends with its commit: wait for the commit,
	// still before any run.
	require.Eventually(t, func() bool {
		return maps.Equal(map[int32]int64{0: n / 2, 1: n / 2}, committed())
	}, 30*time.Second, 20*time.Millisecond, "the ledger's position is committed at assignment")
	runNow(t, e, rc.Name)

	require.Len(t, readAll(t, target), n, "a record below the ledger's position was redriven again")
	gaps, err := st.LedgerGaps(context.Background(), rc.Group, dlq)
	require.NoError(t, err)
	require.Len(t, gaps, 2)
	for _, g := range gaps {
		require.Equal(t, store.GapBackward, g.Cause)
		require.False(t, g.Lost)
		require.Equal(t, int64(n/2-behind), g.From, "the committed offset")
		require.Equal(t, int64(n/2), g.To, "the ledger's position")
	}
	requireGapLogged(t, logs, "committed offset is behind the ledger", "warn", "backward", n/2-behind, n/2)
	rep := requireConserved(t, st, dlq, rc.Group)
	require.Equal(t, n, rep.OnTarget)
	require.Empty(t, rep.Duplicated)
}

// A group whose committed offsets are gone (deleted, or expired with
// offsets.retention.minutes) would read its DLQ again from the earliest
// offset. The ledger knows where it was: the next worker counts each partition's missing
// offset (cause not_found), logs it at WARN with the ledger's position, resumes there and
// redrives only what came after.
func TestLostCommittedOffsetsResumeAtTheLedger(t *testing.T) {
	t.Parallel()
	const n, more = 40, 10
	bs, st, dlq, target, rc, committed := firstLife(t, "lost-offsets-", n)
	deleteGroup(t, bs, rc.Group)
	require.Zero(t, kafkatest.Total(committed()), "the group's offsets are gone")
	produce(t, dlq, dueRecords("b", more, target)...)

	reg := prometheus.NewRegistry()
	logs := &syncBuffer{}
	e := startEngineLogging(t, logs, redrive.Options{Store: st, Kafka: kcfg(t), Registry: reg}, rc)
	waitAssigned(t, bs, rc.Group, 1, 2)
	require.Eventually(t, func() bool {
		return metrictest.Sum(t, reg, "dlq_worker_offset_resets_total", map[string]string{"cause": "not_found"}) == 2
	}, 30*time.Second, 20*time.Millisecond, "each partition's missing offset is seen at assignment")
	warned := logs.lines(t, "no committed offset")
	require.Len(t, warned, 2, "one line per partition")
	for _, l := range warned {
		require.Equal(t, "warn", l["level"])
		require.Equal(t, dlq, l["topic"])
		require.Equal(t, float64(n/2), l["ledger_offset"], "the ledger's position")
	}
	runUntilCommitted(t, e, rc.Name, committed, n+more)

	require.Len(t, readAll(t, target), n+more, "a record below the ledger's position was redriven again")
	rep := requireConserved(t, st, dlq, rc.Group)
	require.Equal(t, n+more, rep.OnTarget)
	require.Empty(t, rep.Duplicated)
}

// firstLife redrives n due records from a new two-partition DLQ with a worker of a new
// route (named after prefix), which it stops once the group committed them all, and
// returns the scene for the next life: the bootstrap servers, the store, the DLQ, the
// target, the route and a reader of the group's committed offsets.
func firstLife(t *testing.T, prefix string, n int) (bs string, st *store.Store, dlq, target string, rc routes.Config, committed func() map[int32]int64) {
	t.Helper()
	bs, st = testenv.KafkaBootstrap(t), storetest.New(t)
	dlq, target = kafkatest.CreateTopic(t, bs, 2, nil), kafkatest.CreateTopic(t, bs, 2, nil)
	rc = route(testenv.UniqueName(prefix), dlq)
	produce(t, dlq, dueRecords("a", n, target)...)
	first := startEngineWith(t, redrive.Options{Store: st, Kafka: kcfg(t)}, rc)
	waitAssigned(t, bs, rc.Group, 1, 2)
	committed = committedOffsets(t, bs, dlq, rc.Group, 2)
	runUntilCommitted(t, first, rc.Name, committed, n)
	stopNow(t, first)
	return bs, st, dlq, target, rc, committed
}

// deleteGroup deletes an empty consumer group, and so its committed offsets.
func deleteGroup(t *testing.T, bs, group string) {
	t.Helper()
	a := kafkatest.Admin(t, bs)
	require.Eventually(t, func() bool { // the group empties once the stopped member has left
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		res, err := a.DeleteConsumerGroups(ctx, []string{group})
		return err == nil && len(res.ConsumerGroupResults) == 1 && res.ConsumerGroupResults[0].Error.Code() == kafka.ErrNoError
	}, 30*time.Second, 200*time.Millisecond)
}
