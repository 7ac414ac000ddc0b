package audit_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/audit"
	"github.com/dlqops/dlq/internal/headers"
	"github.com/dlqops/dlq/internal/kafkaclient"
	"github.com/dlqops/dlq/internal/store"
	"github.com/dlqops/dlq/internal/store/storetest"
	"github.com/dlqops/dlq/internal/testenv"
	"github.com/dlqops/dlq/internal/testenv/kafkatest"
)

// scene is a DLQ topic and a target topic of one partition each, a group, a schema and a
// producer.
type scene struct {
	bootstrap, dlq, target, group string
	st                            *store.Store
	p                             *kafka.Producer
}

func newScene(t *testing.T) scene {
	bootstrap := testenv.KafkaBootstrap(t)
	p, err := kafka.NewProducer(&kafka.ConfigMap{"bootstrap.servers": bootstrap})
	require.NoError(t, err)
	t.Cleanup(p.Close)
	return scene{bootstrap: bootstrap, dlq: kafkatest.CreateTopic(t, bootstrap, 1, nil),
		target: kafkatest.CreateTopic(t, bootstrap, 1, nil), group: testenv.UniqueName("audit-"),
		st: storetest.New(t), p: p}
}

// commit commits the group's offset of the DLQ's partition.
func (sc scene) commit(t *testing.T, offset kafka.Offset) {
	c, err := kafka.NewConsumer(&kafka.ConfigMap{"bootstrap.servers": sc.bootstrap, "group.id": sc.group})
	require.NoError(t, err)
	_, err = c.CommitOffsets([]kafka.TopicPartition{{Topic: &sc.dlq, Partition: 0, Offset: offset}})
	require.NoError(t, err)
	require.NoError(t, c.Close())
}

func h(k, v string) kafka.Header { return kafka.Header{Key: k, Value: []byte(v)} }

func produce(t *testing.T, p *kafka.Producer, topic string, hs ...kafka.Header) {
	t.Helper()
	ch := make(chan kafka.Event, 1)
	require.NoError(t, p.Produce(&kafka.Message{TopicPartition: kafka.TopicPartition{Topic: &topic, Partition: 0}, Value: []byte("v"), Headers: hs}, ch))
	m := (<-ch).(*kafka.Message)
	require.NoError(t, m.TopicPartition.Error)
}

// Three DLQ records, all committed: the first redriven once, the second twice (a crash
// window), the third parked and then replayed by an operator with a replay that still
// carries the first record's redrive id (as replays did before they dropped it). The
// audit finds nothing missing, counts the replay as a replay and not as a copy of the
// first record, and prints the duplicated record with its copy count.
func TestAuditCountsReplaysAndPrintsDuplicates(t *testing.T) {
	ctx := context.Background()
	sc := newScene(t)
	bootstrap, dlq, target, group, st, p := sc.bootstrap, sc.dlq, sc.target, sc.group, sc.st, sc.p

	for range 3 {
		produce(t, p, dlq, h(headers.KeyOriginalTopic, target), h(headers.KeyRetryCount, "1"))
	}
	produce(t, p, target, h(headers.KeyRedriveID, dlq+"/0/0"))
	produce(t, p, target, h(headers.KeyRedriveID, dlq+"/0/1"))
	produce(t, p, target, h(headers.KeyRedriveID, dlq+"/0/1"))
	produce(t, p, target, h(headers.KeyRedriveID, dlq+"/0/0"), h(headers.KeyReplayID, "7-1"), h(headers.KeyReplayJob, "7"))
	_, err := st.StoreBatch(ctx, []store.NewRecord{{DLQ: store.Coordinates{Topic: dlq, Partition: 0, Offset: 2},
		Origin: store.Origin{Topic: target, Partition: -1, Offset: -1}, Value: []byte("v"), Timestamp: time.Now(),
		Reason: store.ReasonExhausted, Status: store.StatusParked, Route: "r"}}, nil)
	require.NoError(t, err)

	sc.commit(t, 3)

	rep, err := audit.Run(ctx, kafkaclient.Config{BootstrapServers: bootstrap}, st, dlq, group)
	require.NoError(t, err)
	require.True(t, rep.OK(), rep.String())
	require.Equal(t, 3, rep.Checked)
	require.Equal(t, 2, rep.OnTarget)
	require.Equal(t, map[store.Status]int{store.StatusParked: 1}, rep.InStore)
	require.Equal(t, 1, rep.Replays)
	require.Equal(t, map[store.Coordinates]int{{Topic: dlq, Partition: 0, Offset: 1}: 2}, rep.Duplicated,
		"the replay is not a second copy of the first record")
	require.Contains(t, rep.String(), "duplicated "+dlq+"/0/1: 2 copies")
	require.Contains(t, rep.String(), "1 replays on the targets")
}

// Two parked records replayed by an operator, as PostgreSQL says: the first replay is on
// its target twice (a retry of the same replay keeps its id), the second is on no record of
// its target (lost after the replay). The audit finds the first, prints it as duplicated,
// and fails on the second, naming it.
func TestAuditFindsEachReplayOnItsTarget(t *testing.T) {
	ctx := context.Background()
	sc := newScene(t)
	bootstrap, dlq, target, group, st, p := sc.bootstrap, sc.dlq, sc.target, sc.group, sc.st, sc.p

	var recs []store.NewRecord
	for off := range int64(2) {
		produce(t, p, dlq, h(headers.KeyOriginalTopic, target), h(headers.KeyRetryCount, "5"))
		recs = append(recs, store.NewRecord{DLQ: store.Coordinates{Topic: dlq, Partition: 0, Offset: off},
			Origin: store.Origin{Topic: target, Partition: -1, Offset: -1}, Value: []byte("v"), Timestamp: time.Now(),
			Reason: store.ReasonExhausted, Status: store.StatusParked, Route: "r"})
	}
	_, err := st.StoreBatch(ctx, recs, nil)
	require.NoError(t, err)
	stored, err := st.ListAfter(ctx, store.Filter{DLQTopic: dlq}, 0, 10)
	require.NoError(t, err)
	require.Len(t, stored, 2)
	actor := store.Actor{Name: "ada"}
	for i, rec := range stored {
		id := fmt.Sprintf("9-%d", i)
		_, err := st.BeginReplay(ctx, rec.ID, store.ReplayLease{Owner: "o", Duration: time.Minute, ReplayID: id}, actor)
		require.NoError(t, err)
		_, err = st.FinishReplay(ctx, rec.ID, "o", store.Coordinates{Topic: target, Partition: 0, Offset: int64(i)}, actor)
		require.NoError(t, err)
	}
	produce(t, p, target, h(headers.KeyReplayID, "9-0"), h(headers.KeyReplayJob, "9"))
	produce(t, p, target, h(headers.KeyReplayID, "9-0"), h(headers.KeyReplayJob, "9"))

	sc.commit(t, 2)

	rep, err := audit.Run(ctx, kafkaclient.Config{BootstrapServers: bootstrap}, st, dlq, group)
	require.NoError(t, err)
	require.False(t, rep.OK(), "a replay found nowhere fails the audit: %s", rep)
	require.Equal(t, map[store.Status]int{store.StatusReplayed: 2}, rep.InStore)
	require.Equal(t, 2, rep.Replayed)
	require.Equal(t, 2, rep.Replays)
	require.Equal(t, []store.Coordinates{{Topic: dlq, Partition: 0, Offset: 1}}, rep.ReplaysMissing)
	require.Equal(t, map[store.Coordinates]int{{Topic: dlq, Partition: 0, Offset: 0}: 2}, rep.Duplicated)
	require.Contains(t, rep.String(), fmt.Sprintf("replay missing %s/0/1", dlq))
	require.Contains(t, rep.String(), "2 rows replayed, 2 replays on the targets, 1 replays missing")
	require.EqualError(t, rep.Err(), "0 DLQ records are missing, 0 offset ranges were never read, 1 replays are missing",
		"dlq-worker audit's exit message names what failed it")
}

// The report lists the first 20 missing records, then how many more: a large loss stays
// readable, and its size is still in the counts and the exit error.
func TestReportListsTwentyThenCounts(t *testing.T) {
	rep := audit.Report{Topic: "t"}
	for off := range int64(25) {
		rep.Missing = append(rep.Missing, store.Coordinates{Topic: "t", Partition: 0, Offset: off})
	}
	s := rep.String()
	require.Contains(t, s, "\n  missing t/0/19")
	require.NotContains(t, s, "missing t/0/20")
	require.Contains(t, s, "\n  ... and 5 more")
	require.EqualError(t, rep.Err(), "25 DLQ records are missing, 0 offset ranges were never read, 0 replays are missing")
}
