package redrive_test

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/headers"
	"github.com/dlqops/dlq/internal/store"
	"github.com/dlqops/dlq/internal/testenv"
	"github.com/dlqops/dlq/internal/testenv/kafkatest"
	"github.com/dlqops/dlq/internal/testenv/proctest"
)

// The dlq-worker binary is built once per test binary, without -race (it is the system
// under test, not the test), into a folder TestMain removes.
var (
	workerOnce sync.Once
	workerDir  string
	workerBin  string
	workerErr  error
)

// removeWorkerAfter removes the built binary once the tests ran.
type removeWorkerAfter struct{ m *testing.M }

func (r removeWorkerAfter) Run() int {
	defer func() {
		if workerDir != "" {
			_ = os.RemoveAll(workerDir)
		}
	}()
	return r.m.Run()
}

func buildWorker(t *testing.T) string {
	t.Helper()
	workerOnce.Do(func() {
		if workerDir, workerErr = os.MkdirTemp("", "dlq-worker-bin-"); workerErr != nil {
			return
		}
		workerBin = filepath.Join(workerDir, "dlq-worker")
		workerErr = proctest.Build(workerDir, "github.com/dlqops/dlq/cmd/dlq-worker")
	})
	require.NoError(t, workerErr)
	return workerBin
}

// startWorker runs dlq-worker with cfg, on the tests' read path, its output appended to
// logPath; it is killed at the end of the test if still alive.
func startWorker(t *testing.T, cfg, logPath string) *proctest.Proc {
	t.Helper()
	var env []string
	if path := testenv.ReadPath(); path != "" {
		env = append(env, "DLQ_WORKER_READ_PATH="+path)
	}
	return proctest.Start(t, logPath, env, buildWorker(t), "run", "--config", cfg)
}

// workerGrace bounds a worker's graceful shutdown in the tests.
const workerGrace = 2 * time.Minute

// watermarks returns a function reading the high watermark of each partition of topic.
func watermarks(t *testing.T, bootstrap, topic string) func() map[int32]int64 {
	t.Helper()
	return must(t, kafkatest.Watermarks(t, bootstrap, topic))
}

// committedOffsets returns a function reading group's committed offset of each partition
// of topic (0 when none).
func committedOffsets(t *testing.T, bootstrap, topic, group string, partitions int) func() map[int32]int64 {
	t.Helper()
	return must(t, kafkatest.Committed(t, bootstrap, topic, group, partitions))
}

// must is read failing the test when it fails.
func must(t *testing.T, read func() (kafkatest.Offsets, error)) func() map[int32]int64 {
	return func() map[int32]int64 {
		m, err := read()
		require.NoError(t, err)
		return m
	}
}

// redriveID is the DLQ coordinates a redriven record came from.
func redriveID(t *testing.T, m *kafka.Message) headers.Coordinates {
	t.Helper()
	c := headers.Decode(headers.From(m.Headers)).Envelope.RedriveID
	require.NotNil(t, c, "record without a redrive id: %v", m.Headers)
	return *c
}

// waitCommitted waits until the group committed every record of the DLQ.
func waitCommitted(t *testing.T, committed, dlqEnd func() map[int32]int64, within time.Duration) {
	t.Helper()
	want := dlqEnd()
	require.Eventually(t, func() bool {
		got := committed()
		for p, end := range want {
			if got[p] < end {
				return false
			}
		}
		return true
	}, within, 200*time.Millisecond, "the group never committed up to %v", want)
}

// waitAssigned waits until group is stable with members members (any number when 0)
// owning partitions partitions between them, so that a run started now covers them all,
// and returns each member's partitions by client id.
func waitAssigned(t *testing.T, bootstrap, group string, members, partitions int) map[string][]int32 {
	t.Helper()
	a := kafkatest.Admin(t, bootstrap)
	var owned map[string][]int32
	require.Eventually(t, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		res, err := a.DescribeConsumerGroups(ctx, []string{group})
		if err != nil || len(res.ConsumerGroupDescriptions) != 1 {
			return false
		}
		d := res.ConsumerGroupDescriptions[0]
		if d.State != kafka.ConsumerGroupStateStable || members > 0 && len(d.Members) != members {
			return false
		}
		owned = map[string][]int32{}
		n := 0
		for _, m := range d.Members {
			for _, tp := range m.Assignment.TopicPartitions {
				owned[m.ClientID] = append(owned[m.ClientID], tp.Partition)
				n++
			}
		}
		return n == partitions
	}, 2*time.Minute, 100*time.Millisecond, "group %s never had %d members owning its %d partitions", group, members, partitions)
	// Closed now, not when the test ends: a group (coordinator) request of an admin client
	// that timed out here may still be pending in librdkafka, and a broker restart in a
	// fault test re-runs its state machine while its coordinator lookup is in flight, so
	// it is sent twice and the test binary aborts (rd_kafka_enq_once_del_source_return:
	// eonce->refcnt > 0).
	a.Close()
	return owned
}

// killPoint is what the group had committed, the ledger held (nil: not read) and the
// target held when a worker was killed; parts limits it to the killed worker's DLQ
// partitions (nil: all).
type killPoint struct {
	committed, ledger, target map[int32]int64
	parts                     map[int32]bool
}

// ledgerPositions reads the ledger's position of each partition of topic for group.
func ledgerPositions(t *testing.T, st *store.Store, group, topic string) map[int32]int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := st.LedgerPositions(ctx, group)
	require.NoError(t, err)
	out := map[int32]int64{}
	for _, c := range cs {
		if c.Topic == topic {
			out[c.Partition] = c.Offset
		}
	}
	return out
}

// duplicateWindows reads target and requires every extra copy of a redriven record to be
// explained by a kill: acknowledged by the target before the kill (below its end then)
// and neither committed nor in the ledger (at or above both the DLQ committed offset and
// the ledger's position then). It returns the number of extra copies and, for each kill,
// how many records it left in that window.
func duplicateWindows(t *testing.T, target string, points []killPoint) (int, []int) {
	t.Helper()
	type copyAt struct {
		id     headers.Coordinates
		target kafka.TopicPartition
	}
	var copies []copyAt
	perID := map[headers.Coordinates]int{}
	for _, m := range readAll(t, target) {
		id := redriveID(t, m)
		copies = append(copies, copyAt{id: id, target: m.TopicPartition})
		perID[id]++
	}
	dups := len(copies) - len(perID)
	windows := make([]int, len(points))
	bound := 0
	for k, pt := range points {
		seen := map[headers.Coordinates]bool{}
		for _, c := range copies {
			if (pt.parts == nil || pt.parts[c.id.Partition]) && !seen[c.id] &&
				int64(c.target.Offset) < pt.target[c.target.Partition] && c.id.Offset >= max(pt.committed[c.id.Partition], pt.ledger[c.id.Partition]) {
				seen[c.id] = true
				windows[k]++
			}
		}
		bound += windows[k]
	}
	require.LessOrEqual(t, dups, bound, "duplicates beyond what the kills left uncommitted (windows %v)", windows)
	return dups, windows
}
