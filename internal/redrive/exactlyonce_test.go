package redrive_test

import (
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/headers"
	"github.com/dlqops/dlq/internal/routes"
	"github.com/dlqops/dlq/internal/store"
	"github.com/dlqops/dlq/internal/store/storetest"
	"github.com/dlqops/dlq/internal/testenv"
	"github.com/dlqops/dlq/internal/testenv/kafkatest"
	"github.com/dlqops/dlq/internal/testenv/proctest"
)

// kill -9 of a delivery exactly_once worker at random points of a 30,000-record run, five
// times, then a run to the end: a read_committed consumer of the target sees every
// redriven record exactly once (none missing, none twice), though each kill left records
// of an open transaction on the target, and the audit finds every DLQ record accounted
// for.
func TestExactlyOnceKillNineMidRun(t *testing.T) {
	t.Parallel()
	const (
		records     = 30000
		partitions  = 3
		maxInFlight = 1000
		kills       = 5
	)
	bs := testenv.KafkaBootstrap(t)
	dlq, orders := seedProcessDLQ(t, bs, records, partitions, 256)
	st, dbURL := storetest.NewWithURL(t)

	name := testenv.UniqueName("eos-kill-")
	group := "dlq-worker." + name
	cfg := proctest.WorkerConfig{DatabaseURL: dbURL, Bootstrap: bs, Route: name, Topic: dlq, MaxInFlight: maxInFlight,
		Delivery: routes.DeliveryExactlyOnce}.Write(t, t.TempDir())
	logPath := filepath.Join(t.TempDir(), "worker.log")
	targetEnd := watermarks(t, bs, orders)
	committed := committedOffsets(t, bs, dlq, group, partitions)

	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 42))
	for k := range kills {
		// The target's end counts the records of open and aborted transactions too.
		left := (records - kafkatest.Total(committed())) * 8 / 10
		require.Positive(t, left, "the DLQ drained before kill %d", k+1)
		at := kafkatest.Total(targetEnd()) + 1 + rng.Int64N(min(4000, left))
		w := startWorker(t, cfg, logPath)
		require.Eventually(t, func() bool { return kafkatest.Total(targetEnd()) >= at }, 2*time.Minute, 10*time.Millisecond,
			"the worker never redrove up to %d; log in %s", at, logPath)
		w.Kill()
	}
	w := startWorker(t, cfg, logPath)
	dlqEnd := watermarks(t, bs, dlq)
	waitCommitted(t, committed, dlqEnd, 3*time.Minute)
	require.NoError(t, w.Term(workerGrace), "graceful shutdown exits 0; log in %s", logPath)

	seen := map[headers.Coordinates]int{}
	for _, m := range readCommitted(t, bs, orders) {
		seen[redriveID(t, m)]++
	}
	var twice []headers.Coordinates
	for id, n := range seen {
		if n > 1 {
			twice = append(twice, id)
		}
	}
	require.Empty(t, twice, "records a read_committed consumer saw more than once")
	require.Len(t, seen, records*9/10, "every due record reaches the target (the rest are parked)")

	rep := requireConserved(t, st, dlq, group)
	require.Equal(t, records, rep.Checked)
	require.Equal(t, records/10, rep.InStore[store.StatusParked])
	require.Equal(t, records*9/10, rep.OnTarget)
	require.Empty(t, rep.Duplicated)
	t.Logf("%d kills: %d records on the target in committed transactions, %d offsets on the target in all (aborted records and markers included); %s",
		kills, len(seen), kafkatest.Total(targetEnd()), rep)
}

// readCommitted reads every committed record of topic as a read_committed consumer, to
// the end of each partition.
func readCommitted(t *testing.T, bootstrap, topic string) []*kafka.Message {
	t.Helper()
	c, err := kafka.NewConsumer(&kafka.ConfigMap{"bootstrap.servers": bootstrap, "group.id": testenv.UniqueName("read-committed-"),
		"enable.auto.commit": false, "isolation.level": "read_committed", "enable.partition.eof": true})
	require.NoError(t, err)
	defer c.Close()
	md, err := c.GetMetadata(&topic, false, 10000)
	require.NoError(t, err)
	var tps []kafka.TopicPartition
	for _, p := range md.Topics[topic].Partitions {
		tps = append(tps, kafka.TopicPartition{Topic: &topic, Partition: p.ID, Offset: kafka.OffsetBeginning})
	}
	require.NoError(t, c.Assign(tps))
	var out []*kafka.Message
	open := len(tps)
	deadline := time.Now().Add(2 * time.Minute)
	for open > 0 {
		require.True(t, time.Now().Before(deadline), "%d partitions of %s never reached their end", open, topic)
		switch ev := c.Poll(100).(type) {
		case *kafka.Message:
			out = append(out, ev)
		case kafka.PartitionEOF:
			open--
		case kafka.Error:
			require.False(t, ev.IsFatal(), "read %s: %v", topic, ev)
		}
	}
	return out
}
