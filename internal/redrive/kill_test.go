package redrive_test

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/store"
	"github.com/dlqops/dlq/internal/store/storetest"
	"github.com/dlqops/dlq/internal/testenv"
	"github.com/dlqops/dlq/internal/testenv/kafkatest"
	"github.com/dlqops/dlq/internal/testenv/proctest"
)

// kill -9 of the worker process at random points of a 20,000-record run, at least five
// times in a row, then a run to the end: nothing is lost, the committed offset never moves
// back, and every duplicate on the target is a record acknowledged by the target but
// neither committed nor in the ledger when a kill hit (the next life resumes at the
// ledger's position), at most a window (max_in_flight) per partition.
func TestKillNineMidRun(t *testing.T) {
	t.Parallel()
	const (
		records     = 20000
		partitions  = 3
		maxInFlight = 1000
		minKills    = 5
	)
	bs := testenv.KafkaBootstrap(t)
	dlq, orders := seedProcessDLQ(t, bs, records, partitions, 256)
	st, dbURL := storetest.NewWithURL(t)

	name := testenv.UniqueName("kill-")
	group := "dlq-worker." + name
	cfg := proctest.WorkerConfig{DatabaseURL: dbURL, Bootstrap: bs, Route: name, Topic: dlq, MaxInFlight: maxInFlight}.Write(t, t.TempDir())
	logPath := filepath.Join(t.TempDir(), "worker.log")
	targetEnd := watermarks(t, bs, orders)
	committed := committedOffsets(t, bs, dlq, group, partitions)

	var points []killPoint
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 9))
	began := time.Now()
	for len(points) < minKills {
		// At least 80 % of what is above the committed offsets reaches the target again.
		left := (records - kafkatest.Total(committed())) * 8 / 10
		require.Positive(t, left, "the DLQ drained before %d kills", minKills)
		at := kafkatest.Total(targetEnd()) + 1 + rng.Int64N(min(3000, left))
		w := startWorker(t, cfg, logPath)
		require.Eventually(t, func() bool { return kafkatest.Total(targetEnd()) >= at }, 2*time.Minute, 10*time.Millisecond,
			"the worker never redrove up to %d; log in %s", at, logPath)
		w.Kill()
		points = append(points, killPoint{committed: committed(), target: targetEnd(), ledger: ledgerPositions(t, st, group, dlq)})
	}
	w := startWorker(t, cfg, logPath)
	dlqEnd := watermarks(t, bs, dlq)
	waitCommitted(t, committed, dlqEnd, 3*time.Minute)
	require.NoError(t, w.Term(workerGrace), "graceful shutdown exits 0; log in %s", logPath)
	elapsed := time.Since(began)

	final := committed()
	require.Equal(t, dlqEnd(), final, "every DLQ offset is below the committed offset")
	for i := 1; i < len(points); i++ {
		for p, off := range points[i-1].committed {
			require.GreaterOrEqual(t, points[i].committed[p], off, "committed offset of partition %d moved back at kill %d", p, i+1)
		}
	}
	rep := requireConserved(t, st, dlq, group)
	require.Equal(t, records, rep.Checked)
	require.Equal(t, records/10, rep.InStore[store.StatusParked])
	require.Equal(t, records*9/10, rep.OnTarget)

	dups, windows := duplicateWindows(t, orders, points)
	for k, w := range windows { // each partition reads at most max_in_flight past the ledger
		require.LessOrEqual(t, w, partitions*maxInFlight, "kill %d left more past the ledger than the windows allow", k+1)
	}
	t.Logf("%d kills in %s: %d duplicate copies (%.0f per kill); acknowledged-but-not-in-the-ledger window at each kill %v (max_in_flight %d); %s",
		len(points), elapsed.Round(time.Second), dups, float64(dups)/float64(len(points)), windows, maxInFlight, rep)
}

// Three worker processes in one group split a 6-partition DLQ; one is SIGKILLed mid-run.
// Once the group notices (session timeout), the two others take over its partitions and
// finish; nothing is lost and the only duplicates are the killed worker's uncommitted
// acknowledgements.
func TestInstancesTakeOverAKilledOne(t *testing.T) {
	t.Parallel()
	const (
		records     = 12000
		partitions  = 6
		maxInFlight = 500
	)
	bs := testenv.KafkaBootstrap(t)
	dlq, orders := seedProcessDLQ(t, bs, records, partitions, 1)
	st, dbURL := storetest.NewWithURL(t)

	name := testenv.UniqueName("multi-")
	group := "dlq-worker." + name
	// 400 records/s per worker: the run lasts ~10 s, long enough to kill one in the middle.
	cfg := proctest.WorkerConfig{DatabaseURL: dbURL, Bootstrap: bs, Route: name, Topic: dlq, MaxInFlight: maxInFlight, RateLimit: 400}.Write(t, t.TempDir())
	dir := t.TempDir()
	var ws []*proctest.Proc
	for i := range 3 {
		ws = append(ws, startWorker(t, cfg, filepath.Join(dir, fmt.Sprintf("worker-%d.log", i))))
	}
	owned := waitAssigned(t, bs, group, 3, partitions)
	targetEnd := watermarks(t, bs, orders)
	committed := committedOffsets(t, bs, dlq, group, partitions)
	require.Eventually(t, func() bool { return kafkatest.Total(targetEnd()) >= records/4 }, 2*time.Minute, 20*time.Millisecond)

	victim := ws[0]
	ws[0].Kill()
	pt := killPoint{committed: committed(), target: targetEnd(), parts: map[int32]bool{}}
	for client, ps := range owned {
		if strings.Contains(client, fmt.Sprintf("-%d-", victim.Pid())) {
			for _, p := range ps {
				pt.parts[p] = true
			}
		}
	}
	require.Len(t, pt.parts, partitions/3, "the killed worker's partitions among %v", owned)
	after := waitAssigned(t, bs, group, 2, partitions)
	waitCommitted(t, committed, watermarks(t, bs, dlq), 3*time.Minute)
	for _, w := range ws[1:] {
		require.NoError(t, w.Term(workerGrace), "graceful shutdown exits 0; logs in %s", dir)
	}
	rep := requireConserved(t, st, dlq, group)
	require.Equal(t, records, rep.Checked)
	require.Equal(t, records/10, rep.InStore[store.StatusParked])
	require.Equal(t, records*9/10, rep.OnTarget)
	dups, windows := duplicateWindows(t, orders, []killPoint{pt})
	t.Logf("before the kill %v, after %v; %d duplicate copies, the killed worker's window %v (max_in_flight %d); %s",
		owned, after, dups, windows, maxInFlight, rep)
}

// seedProcessDLQ creates a DLQ and its target topic and fills the DLQ with records
// spread over its partitions, values of valueSize bytes, every tenth exhausted (parked),
// the rest due.
func seedProcessDLQ(t *testing.T, bs string, records, partitions, valueSize int) (dlq, target string) {
	t.Helper()
	dlq = kafkatest.CreateTopic(t, bs, partitions, nil)
	target = kafkatest.CreateTopic(t, bs, partitions, nil)
	msgs := make([]*kafka.Message, records)
	for i := range msgs {
		retry := "1"
		if i%10 == 0 {
			retry = "5"
		}
		msgs[i] = &kafka.Message{TopicPartition: kafka.TopicPartition{Partition: int32(i % partitions)}, Key: []byte(strconv.Itoa(i)),
			Value: make([]byte, valueSize), Headers: []kafka.Header{hdr("retryCount", retry), hdr("originalTopic", target)}}
	}
	produceTo(t, bs, dlq, msgs...)
	return dlq, target
}
