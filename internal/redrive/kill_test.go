package redrive_test

import (
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/headers"
	"github.com/dlqops/dlq/internal/store"
	"github.com/dlqops/dlq/internal/store/storetest"
	"github.com/dlqops/dlq/internal/testenv"
	"github.com/dlqops/dlq/internal/testenv/kafkatest"
)

// kill -9 of the worker process at random points of a 20,000-record run, at least five
// times in a row, then a run to the end: nothing is lost, the committed offset never moves
// back, and every duplicate on the target is a record acknowledged by the target but not
// yet committed when a kill hit (the in-flight and commit window).
func TestKillNineMidRun(t *testing.T) {
	t.Parallel()
	const (
		records     = 20000
		partitions  = 3
		maxInFlight = 1000
		minKills    = 5
	)
	bs := testenv.KafkaBootstrap(t)
	dlq := kafkatest.CreateTopic(t, bs, partitions, nil)
	orders := kafkatest.CreateTopic(t, bs, partitions, nil)
	st, dbURL := storetest.NewWithURL(t)

	msgs := make([]*kafka.Message, records)
	for i := range msgs {
		retry := "1"
		if i%10 == 0 {
			retry = "5" // exhausted: parked
		}
		msgs[i] = &kafka.Message{TopicPartition: kafka.TopicPartition{Partition: int32(i % partitions)}, Key: []byte(strconv.Itoa(i)),
			Value: make([]byte, 256), Headers: []kafka.Header{hdr("retryCount", retry), hdr("originalTopic", orders)}}
	}
	produce(t, dlq, msgs...)

	name := testenv.UniqueName("kill-")
	group := "dlq-worker." + name
	cfg := workerConfig(t, dbURL, bs, procRoute{name: name, topic: dlq, maxInFlight: maxInFlight})
	logPath := filepath.Join(t.TempDir(), "worker.log")
	targetEnd := watermarks(t, bs, orders)
	committed := committedOffsets(t, bs, dlq, group, partitions)

	// What the group had committed and the target held at each kill.
	type killPoint struct{ committed, target map[int32]int64 }
	var points []killPoint
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 9))
	began := time.Now()
	for len(points) < minKills {
		// At least 80 % of what is above the committed offsets reaches the target again.
		left := (records - total(committed())) * 8 / 10
		require.Positive(t, left, "the DLQ drained before %d kills", minKills)
		at := total(targetEnd()) + 1 + rng.Int64N(min(3000, left))
		w := startWorker(t, cfg, logPath)
		require.Eventually(t, func() bool { return total(targetEnd()) >= at }, 2*time.Minute, 10*time.Millisecond,
			"the worker never redrove up to %d; log in %s", at, logPath)
		w.kill()
		points = append(points, killPoint{committed: committed(), target: targetEnd()})
	}
	w := startWorker(t, cfg, logPath)
	dlqEnd := watermarks(t, bs, dlq)
	waitCommitted(t, committed, dlqEnd, 3*time.Minute)
	require.NoError(t, w.term(), "graceful shutdown exits 0; log in %s", logPath)
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

	// Every extra copy must be explained by a kill: acknowledged (below the target's end at
	// the kill) and not committed (at or above the DLQ committed offset at the kill).
	type copyAt struct {
		id     headers.Coordinates
		target kafka.TopicPartition
	}
	var copies []copyAt
	perID := map[headers.Coordinates]int{}
	for _, m := range readAll(t, orders) {
		id := redriveID(t, m)
		copies = append(copies, copyAt{id: id, target: m.TopicPartition})
		perID[id]++
	}
	dups := len(copies) - len(perID)
	windows := make([]int, len(points))
	for k, pt := range points {
		seen := map[headers.Coordinates]bool{}
		for _, c := range copies {
			if int64(c.target.Offset) < pt.target[c.target.Partition] && c.id.Offset >= pt.committed[c.id.Partition] && !seen[c.id] {
				seen[c.id] = true
				windows[k]++
			}
		}
	}
	bound := 0
	for _, n := range windows {
		bound += n
	}
	t.Logf("%d kills in %s: %d records on the target for %d redriven, %d duplicate copies; acknowledged-but-uncommitted window at each kill %v (max_in_flight %d); %s",
		len(points), elapsed.Round(time.Second), len(copies), len(perID), dups, windows, maxInFlight, rep)
	require.LessOrEqual(t, dups, bound, "duplicates beyond what the kills left uncommitted")
}
