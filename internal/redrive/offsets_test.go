package redrive_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/audit"
	"github.com/dlqops/dlq/internal/headers"
	"github.com/dlqops/dlq/internal/redrive"
	"github.com/dlqops/dlq/internal/routes"
	"github.com/dlqops/dlq/internal/store"
	"github.com/dlqops/dlq/internal/store/storetest"
	"github.com/dlqops/dlq/internal/testenv"
	"github.com/dlqops/dlq/internal/testenv/kafkatest"
	"github.com/dlqops/dlq/internal/testenv/metrictest"
)

// dueRecords returns n DLQ records for target, all due, keyed by batch and index.
func dueRecords(batch string, n int, target string) []*kafka.Message {
	old := ms(time.Now().Add(-2 * time.Hour))
	msgs := make([]*kafka.Message, n)
	for i := range msgs {
		msgs[i] = &kafka.Message{TopicPartition: kafka.TopicPartition{Partition: int32(i % 2)}, Key: []byte(fmt.Sprintf("%s-%d", batch, i)),
			Value: []byte("v"), Headers: []kafka.Header{hdr("retryCount", "1"), hdr("originalTopic", target), hdr(headers.KeyLastFailure, old)}}
	}
	return msgs
}

// moveGroupTo commits offsets for group with the admin client (the group must be empty),
// as `kafka-consumer-groups --reset-offsets` or a lost-offsets reset would.
func moveGroupTo(t *testing.T, bs, group, topic string, offsets map[int32]int64) {
	t.Helper()
	a := kafkatest.Admin(t, bs)
	var tps []kafka.TopicPartition
	for p, off := range offsets {
		tps = append(tps, kafka.TopicPartition{Topic: &topic, Partition: p, Offset: kafka.Offset(off)})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.Eventually(t, func() bool { // the group empties once the stopped member has left
		res, err := a.AlterConsumerGroupOffsets(ctx, []kafka.ConsumerGroupTopicPartitions{{Group: group, Partitions: tps}})
		if err != nil || len(res.ConsumerGroupsTopicPartitions) != 1 {
			return false
		}
		for _, tp := range res.ConsumerGroupsTopicPartitions[0].Partitions {
			if tp.Error != nil {
				return false
			}
		}
		return true
	}, 30*time.Second, 200*time.Millisecond)
}

// runUntilCommitted runs route until the group committed n offsets (the group may list
// the member before its assignment reaches the engine: such a run reads nothing).
func runUntilCommitted(t *testing.T, e *redrive.Engine, route string, committed func() map[int32]int64, n int) {
	t.Helper()
	require.Eventually(t, func() bool {
		return runOnce(e, route) == nil && kafkatest.Total(committed()) == int64(n)
	}, time.Minute, 100*time.Millisecond)
}

func stopNow(t *testing.T, e *redrive.Engine) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, e.Stop(ctx))
}

// jumpSetup redrives a first batch, stops the worker, appends a second batch and moves the
// group's committed offsets to the end of the DLQ behind the worker's back: the second
// batch is skipped unread, as after a reset to latest. A new engine then starts.
type jumpSetup struct {
	bs, dlq, target string
	rc              routes.Config
	st              *store.Store
	reg             *prometheus.Registry
	logs            *syncBuffer
	e               *redrive.Engine
}

func startAfterJump(t *testing.T, onJump string, first, skipped int) jumpSetup {
	t.Helper()
	s := jumpSetup{bs: testenv.KafkaBootstrap(t), st: storetest.New(t), reg: prometheus.NewRegistry(), logs: &syncBuffer{}}
	s.dlq = kafkatest.CreateTopic(t, s.bs, 2, nil)
	s.target = kafkatest.CreateTopic(t, s.bs, 2, nil)
	s.rc = route(testenv.UniqueName("jump-"), s.dlq)
	s.rc.OnOffsetJump = onJump
	produce(t, s.dlq, dueRecords("a", first, s.target)...)
	e1 := startEngineWith(t, redrive.Options{Store: s.st, Kafka: kcfg(t)}, s.rc)
	waitAssigned(t, s.bs, s.rc.Group, 1, 2)
	runUntilCommitted(t, e1, s.rc.Name, committedOffsets(t, s.bs, s.dlq, s.rc.Group, 2), first)
	stopNow(t, e1)

	produce(t, s.dlq, dueRecords("b", skipped, s.target)...)
	moveGroupTo(t, s.bs, s.rc.Group, s.dlq, watermarks(t, s.bs, s.dlq)())
	s.e = startEngineLogging(t, s.logs, redrive.Options{Store: s.st, Kafka: kcfg(t), Registry: s.reg}, s.rc)
	waitAssigned(t, s.bs, s.rc.Group, 1, 2)
	// Seen at assignment, once per partition (the group may list the member before its
	// assignment reaches the engine).
	require.Eventually(t, func() bool {
		return metrictest.Sum(t, s.reg, "dlq_worker_offset_resets_total", map[string]string{"cause": "jump"}) == 2
	}, 30*time.Second, 20*time.Millisecond)
	return s
}

func (s jumpSetup) gaps(t *testing.T) []store.Gap {
	t.Helper()
	gaps, err := s.st.LedgerGaps(context.Background(), s.rc.Group, s.dlq)
	require.NoError(t, err)
	return gaps
}

// A committed offset moved forward while the worker was down (a reset to latest): at assignment the worker sees it against the ledger, counts it, records the
// range, rewinds to where the ledger says it committed and redrives the skipped records;
// the audit is clean.
func TestOffsetJumpIsRewound(t *testing.T) {
	t.Parallel()
	const first, skipped = 40, 30
	s := startAfterJump(t, routes.OnJumpRewind, first, skipped)
	runNow(t, s.e, s.rc.Name)

	require.Len(t, readAll(t, s.target), first+skipped, "the skipped records are redriven")
	require.Equal(t, 2.0, metrictest.Sum(t, s.reg, "dlq_worker_offset_resets_total", map[string]string{"cause": "jump"}))
	gaps := s.gaps(t)
	require.Len(t, gaps, 2)
	for _, g := range gaps {
		require.Equal(t, store.GapJump, g.Cause)
		require.False(t, g.Lost, "read again")
		require.Equal(t, int64(first/2), g.From, "the ledger's end")
		require.Equal(t, int64((first+skipped)/2), g.To, "the committed offset")
	}
	requireGapLogged(t, s.logs, "committed offset jumped ahead", "error", "jump", first/2, (first+skipped)/2)
	rep := requireConserved(t, s.st, s.dlq, s.rc.Group)
	require.Equal(t, first+skipped, rep.OnTarget)
	require.Empty(t, rep.Duplicated, "nothing redriven twice")
}

// requireGapLogged checks that each of the two partitions' gaps was logged at level with
// its cause and range.
func requireGapLogged(t *testing.T, logs *syncBuffer, msg, level, cause string, from, to int) {
	t.Helper()
	lines := logs.lines(t, msg)
	require.Len(t, lines, 2, "one line per partition")
	for _, l := range lines {
		require.Equal(t, level, l["level"])
		require.Equal(t, cause, l["cause"])
		require.Equal(t, float64(from), l["from_offset"])
		require.Equal(t, float64(to), l["to_offset"])
	}
}

// In alarm mode the jump is counted and recorded as lost with its range, nothing is
// read again, and the audit reports the skipped records.
func TestOffsetJumpAlarm(t *testing.T) {
	t.Parallel()
	const first, skipped = 40, 30
	s := startAfterJump(t, routes.OnJumpAlarm, first, skipped)
	runNow(t, s.e, s.rc.Name)

	require.Len(t, readAll(t, s.target), first, "nothing is read again")
	require.Equal(t, 2.0, metrictest.Sum(t, s.reg, "dlq_worker_offset_resets_total", map[string]string{"cause": "jump"}))
	gaps := s.gaps(t)
	require.Len(t, gaps, 2)
	for _, g := range gaps {
		require.Equal(t, store.GapJump, g.Cause)
		require.True(t, g.Lost)
		require.Equal(t, int64(first/2), g.From)
		require.Equal(t, int64((first+skipped)/2), g.To)
	}
	rep, err := audit.Run(context.Background(), kcfg(t), s.st, s.dlq, s.rc.Group)
	require.NoError(t, err)
	require.False(t, rep.OK())
	require.Len(t, rep.Missing, skipped, rep.String())
	require.ElementsMatch(t, []audit.LostRange{
		{Partition: 0, From: first / 2, To: (first + skipped) / 2, Cause: string(store.GapJump)},
		{Partition: 1, From: first / 2, To: (first + skipped) / 2, Cause: string(store.GapJump)},
	}, rep.Lost, "the ledger's lost ranges, as docs/semantics.md says")

	// Counted once: a later run does not see the jump again.
	runNow(t, s.e, s.rc.Name)
	require.Equal(t, 2.0, metrictest.Sum(t, s.reg, "dlq_worker_offset_resets_total", map[string]string{"cause": "jump"}))
}

// Records deleted (retention) above the committed offset before the worker read them:
// the audit reports the range from the log start on its own, the next run records the
// loss in the ledger with its range and counts it, redrives what is left, and the audit
// then reports the lost range from the ledger and fails.
func TestRetentionLossIsReportedFromTheLedger(t *testing.T) {
	t.Parallel()
	const first, second, deletedUnread = 40, 30, 10 // per partition: 20 read, 15 more, 10 of them deleted
	bs := testenv.KafkaBootstrap(t)
	st := storetest.New(t)
	reg := prometheus.NewRegistry()
	dlq := kafkatest.CreateTopic(t, bs, 2, nil)
	target := kafkatest.CreateTopic(t, bs, 2, nil)
	rc := route(testenv.UniqueName("retention-"), dlq)
	produce(t, dlq, dueRecords("a", first, target)...)
	e := startEngineWith(t, redrive.Options{Store: st, Kafka: kcfg(t), Registry: reg}, rc)
	waitAssigned(t, bs, rc.Group, 1, 2)
	runUntilCommitted(t, e, rc.Name, committedOffsets(t, bs, dlq, rc.Group, 2), first)
	requireConserved(t, st, dlq, rc.Group)

	produce(t, dlq, dueRecords("b", second, target)...)
	kafkatest.DeleteRecords(t, bs, dlq, kafkatest.Offsets{0: first/2 + deletedUnread, 1: first/2 + deletedUnread})
	want := func(cause string) []audit.LostRange {
		return []audit.LostRange{{Partition: 0, From: first / 2, To: first/2 + deletedUnread, Cause: cause},
			{Partition: 1, From: first / 2, To: first/2 + deletedUnread, Cause: cause}}
	}
	rep, err := audit.Run(context.Background(), kcfg(t), st, dlq, rc.Group)
	require.NoError(t, err)
	require.False(t, rep.OK())
	require.Equal(t, want(audit.CauseDeletedUnread), rep.Lost, "seen before the worker reads: above the committed offset, below the log start")

	runNow(t, e, rc.Name)
	require.Equal(t, 2.0, metrictest.Sum(t, reg, "dlq_worker_offset_resets_total", map[string]string{"cause": "below_log_start"}))
	require.Len(t, readAll(t, target), first+second-2*deletedUnread, "what is left is redriven")
	rep, err = audit.Run(context.Background(), kcfg(t), st, dlq, rc.Group)
	require.NoError(t, err)
	require.False(t, rep.OK(), "a loss fails the audit")
	require.Empty(t, rep.Missing)
	require.Equal(t, want(string(store.GapBelowLogStart)), rep.Lost, rep.String())
	require.Empty(t, rep.Unproven)
}

// Ledger retention drops the positions nobody holds, not those of a partition a worker
// holds: an idle partition's position, which nothing has moved for longer than the
// retention age, is marked held by the worker's runs and survives the purge.
func TestHeldIdlePositionSurvivesLedgerRetention(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	bs := testenv.KafkaBootstrap(t)
	var now atomic.Pointer[time.Time]
	long := time.Now().Add(-400 * 24 * time.Hour)
	now.Store(&long)
	st, url := storetest.NewWithURL(t, store.WithClock(func() time.Time { return *now.Load() }))
	dlq := kafkatest.CreateTopic(t, bs, 1, nil)
	rc := route(testenv.UniqueName("held-"), dlq)
	require.NoError(t, st.AdvanceLedgerPositions(ctx, rc.Group, []store.Coordinates{{Topic: dlq, Partition: 0, Offset: 0}}))
	today := time.Now()
	now.Store(&today)
	e := startEngineWith(t, redrive.Options{Store: st, Kafka: kcfg(t)}, rc)
	waitAssigned(t, bs, rc.Group, 1, 1)

	conn, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer conn.Close(ctx)
	require.Eventually(t, func() bool { // a run before the assignment reached the engine holds nothing
		var at time.Time
		return runOnce(e, rc.Name) == nil &&
			conn.QueryRow(ctx, `SELECT updated_at FROM ledger_positions WHERE consumer_group = $1`, rc.Group).Scan(&at) == nil && at.After(long.Add(time.Hour))
	}, time.Minute, 100*time.Millisecond)

	purged := map[string]int64{}
	require.NoError(t, st.PurgeOld(ctx, store.Retention{Ledger: 365 * 24 * time.Hour}, func(table string, n int64) { purged[table] += n }))
	require.Zero(t, purged[store.TablePositions])
	pos, err := st.LedgerPositions(ctx, rc.Group)
	require.NoError(t, err)
	require.Equal(t, []store.Coordinates{{Topic: dlq, Partition: 0, Offset: 0}}, pos)
}
