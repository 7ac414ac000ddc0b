package redrive_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/redrive"
	"github.com/dlqops/dlq/internal/store/storetest"
	"github.com/dlqops/dlq/internal/testenv"
	"github.com/dlqops/dlq/internal/testenv/kafkatest"
)

// While PostgreSQL's synchronous commits stall (a synchronous standby that does not
// answer, a disk whose flush does not end), redriving goes on: the ledger's positions are
// written without waiting for their flush. Nothing is committed to Kafka past what
// PostgreSQL flushed before the stall; once the stall ends, the run finishes, commits
// everything and the audit accounts for every record.
func TestRedrivingDoesNotWaitForTheLedgersFlush(t *testing.T) {
	t.Parallel()
	const n = 6000 // over 2 partitions, twice the window past the ledger (max_in_flight) each
	ctx := context.Background()
	st, pg := storetest.NewPrivate(t)
	bs := testenv.KafkaBootstrap(t)
	dlq := kafkatest.CreateTopic(t, bs, 2, nil)
	target := kafkatest.CreateTopic(t, bs, 2, nil)
	produce(t, dlq, dueRecords("flush", n, target)...)
	rc := route(testenv.UniqueName("flush-"), dlq)
	rc.RateLimit = 2000 // a run of 3 s, so that the stall begins in the middle of it

	e := startEngineWith(t, redrive.Options{Store: st, Kafka: kcfg(t)}, rc)
	waitAssigned(t, bs, rc.Group, 1, 2)
	run := runInBackground(e, rc.Name)
	onTarget := watermarks(t, bs, target)
	require.Eventually(t, func() bool { return kafkatest.Total(onTarget()) >= n/10 }, time.Minute, 10*time.Millisecond)
	pg.StallSynchronousCommits()
	beforeStall := kafkatest.Total(onTarget()) // acknowledged before the stall: an upper bound of what was flushed
	require.Less(t, beforeStall, int64(n), "the run ended before the stall began")

	require.Eventually(t, func() bool { return kafkatest.Total(onTarget()) >= n }, 2*time.Minute, 20*time.Millisecond,
		"redriving stopped while synchronous commits stall")
	// The worker's calls give up on a stalled commit after 10 s, and PostgreSQL then
	// commits it locally: redriving must not have waited for that either.
	require.NotContains(t, pg.Log(), "canceling wait for synchronous replication",
		"the records were redriven only once a stalled synchronous commit was given up")
	committed := committedOffsets(t, bs, dlq, rc.Group, 2)
	require.LessOrEqual(t, kafkatest.Total(committed()), beforeStall, "committed past what PostgreSQL flushed")
	var visible int64
	positions, err := st.LedgerPositions(ctx, rc.Group)
	require.NoError(t, err)
	for _, p := range positions {
		visible += p.Offset
	}
	require.Greater(t, visible, beforeStall, "the positions written during the stall are visible: a restarted worker resumes there")

	pg.ResumeSynchronousCommits()
	requireResumed(t, run, "the stall")
	waitCommitted(t, committed, watermarks(t, bs, dlq), time.Minute)
	rep := requireConservedOn(t, kcfg(t), st, dlq, rc.Group)
	require.Equal(t, n, rep.OnTarget)
}
