package redrive_test

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/headers"
	"github.com/dlqops/dlq/internal/kafkaclient"
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

// A zombie: an exactly_once worker frozen (SIGSTOP) mid-run with a transaction open,
// replaced by another worker that finishes the DLQ, then thawed. The replacement fences
// it, by the transactional.id when both share the worker identity (group_instance_id),
// by the group's generation otherwise: the zombie's transaction never commits, so a
// read_committed consumer sees each record exactly once.
func TestExactlyOnceZombieCannotCommit(t *testing.T) {
	t.Parallel()
	for name, identity := range map[string]string{"same identity": "eos-zombie", "another identity": ""} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			const (
				records    = 12000
				partitions = 3
			)
			bs := testenv.KafkaBootstrap(t)
			dlq, orders := seedProcessDLQ(t, bs, records, partitions, 64)
			st, dbURL := storetest.NewWithURL(t)
			route := testenv.UniqueName("eos-zombie-")
			group := "dlq-worker." + route
			gi := identity
			if gi != "" {
				gi = testenv.UniqueName(identity + "-")
			}
			cfg := proctest.WorkerConfig{DatabaseURL: dbURL, Bootstrap: bs, Route: route, Topic: dlq, MaxInFlight: 500, RateLimit: 1000,
				GroupInstance: gi, Delivery: routes.DeliveryExactlyOnce}.Write(t, t.TempDir())
			dir := t.TempDir()
			t.Cleanup(func() { logTailsOnFailure(t, dir) })
			targetEnd := watermarks(t, bs, orders)
			committed := committedOffsets(t, bs, dlq, group, partitions)

			zombie := startWorker(t, cfg, filepath.Join(dir, "zombie.log"))
			require.Eventually(t, func() bool { return kafkatest.Total(targetEnd()) >= records/4 }, 2*time.Minute, 10*time.Millisecond)
			zombie.Signal(syscall.SIGSTOP)
			frozenAt := committed()

			next := startWorker(t, cfg, filepath.Join(dir, "next.log"))
			waitCommitted(t, committed, watermarks(t, bs, dlq), 3*time.Minute)
			zombie.Signal(syscall.SIGCONT)
			// The zombie learns it is fenced at its next request to the cluster: its
			// producer is fenced, or its partitions were lost (the group moved on) and
			// its transaction, if one was open, fails.
			require.Eventually(t, func() bool {
				b, err := os.ReadFile(filepath.Join(dir, "zombie.log"))
				log := strings.ToLower(string(b))
				return err == nil && (strings.Contains(log, "fenced") || strings.Contains(log, "partition lost"))
			}, 2*time.Minute, 100*time.Millisecond, "the zombie never learned it was fenced; logs in %s", dir)
			_ = zombie.Term(workerGrace) // fenced: it may exit non-zero
			require.NoError(t, next.Term(workerGrace), "graceful shutdown exits 0; logs in %s", dir)

			seen := map[headers.Coordinates]int{}
			for _, m := range readCommitted(t, bs, orders) {
				seen[redriveID(t, m)]++
			}
			for id, n := range seen {
				require.Equal(t, 1, n, "record %v seen %d times by a read_committed consumer; logs in %s", id, n, dir)
			}
			require.Len(t, seen, records*9/10)
			rep := requireConserved(t, st, dlq, group)
			require.Equal(t, records, rep.Checked)
			require.Empty(t, rep.Duplicated)
			t.Logf("frozen at committed %v; %d records once on the target; %s", frozenAt, len(seen), rep)
		})
	}
}

// The broker (DLQ, target, group and transaction coordinator in one) stops for 20 s in
// the middle of an exactly_once run, under a supervisor that restarts the worker whenever
// it exits (a transaction the outage made fail stops the route, and the worker with it):
// once the broker is back the DLQ is committed to its end, and a read_committed consumer
// sees every redriven record exactly once.
func TestExactlyOnceBrokerRestartMidRun(t *testing.T) {
	t.Parallel()
	const (
		records    = 9000
		partitions = 3
	)
	b := kafkatest.StartBroker(t)
	bs := b.Bootstrap()
	dlq, orders := seedProcessDLQ(t, bs, records, partitions, 64)
	st, dbURL := storetest.NewWithURL(t)
	route := testenv.UniqueName("eos-broker-")
	group := "dlq-worker." + route
	cfg := proctest.WorkerConfig{DatabaseURL: dbURL, Bootstrap: bs, Route: route, Topic: dlq, MaxInFlight: 500, RateLimit: 500,
		Delivery: routes.DeliveryExactlyOnce}.Write(t, t.TempDir())
	dir := t.TempDir()
	sup := superviseWorker(t, cfg, filepath.Join(dir, "worker.log"))
	targetEnd := watermarks(t, bs, orders)
	require.Eventually(t, func() bool { return kafkatest.Total(targetEnd()) >= records/4 }, 2*time.Minute, 10*time.Millisecond)

	dlqEnd, committed := watermarks(t, bs, dlq)(), kafkatest.Committed(t, bs, dlq, group, partitions)
	down := time.Now()
	b.Stop()
	waitOutage(down, 20*time.Second)
	b.Start()

	require.Eventually(t, func() bool {
		got, err := committed() // the group coordinator may still be loading
		if err != nil {
			return false
		}
		for p, end := range dlqEnd {
			if got[p] < end {
				return false
			}
		}
		return true
	}, 5*time.Minute, 200*time.Millisecond, "the group never committed up to %v; log in %s", dlqEnd, dir)
	starts := sup.stop()

	seen := map[headers.Coordinates]int{}
	for _, m := range readCommitted(t, bs, orders) {
		seen[redriveID(t, m)]++
	}
	for id, n := range seen {
		require.Equal(t, 1, n, "record %v seen %d times by a read_committed consumer; log in %s", id, n, dir)
	}
	require.Len(t, seen, records*9/10)
	rep := requireConservedOn(t, kafkaclient.Config{BootstrapServers: bs}, st, dlq, group)
	require.Equal(t, records, rep.Checked)
	require.Empty(t, rep.Duplicated)
	t.Logf("worker started %d times; %d records once on the target; %s", starts, len(seen), rep)
}

// supervisor restarts a worker process whenever it exits, as a service manager would.
type supervisor struct {
	quit chan struct{}
	done chan int // the number of starts, once stopped
}

// superviseWorker runs dlq-worker with cfg under a supervisor, its output appended to
// logPath; the test must stop it.
func superviseWorker(t *testing.T, cfg, logPath string) *supervisor {
	t.Helper()
	bin := buildWorker(t)
	var env []string
	if path := testenv.ReadPath(); path != "" {
		env = append(env, "DLQ_WORKER_READ_PATH="+path)
	}
	s := &supervisor{quit: make(chan struct{}), done: make(chan int, 1)}
	go func() {
		starts := 0
		for {
			p, err := proctest.Spawn(logPath, env, bin, "run", "--config", cfg)
			if err != nil {
				s.done <- starts
				return
			}
			starts++
			select {
			case <-p.Done():
				time.Sleep(time.Second) // a service manager's restart delay
			case <-s.quit:
				_ = p.Term(workerGrace)
				s.done <- starts
				return
			}
		}
	}()
	t.Cleanup(func() {
		select {
		case <-s.quit:
		default:
			s.stop()
		}
	})
	return s
}

// stop ends the supervised worker gracefully and returns how often it was started.
func (s *supervisor) stop() int {
	close(s.quit)
	return <-s.done
}

// logTailsOnFailure prints the end of each worker log in dir when t failed: t.TempDir is
// removed once the test ends.
func logTailsOnFailure(t *testing.T, dir string) {
	if !t.Failed() {
		return
	}
	logs, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	for _, path := range logs {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Logf("%s: %v", path, err)
			continue
		}
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		t.Logf("last lines of %s:\n%s", filepath.Base(path), strings.Join(lines[max(0, len(lines)-40):], "\n"))
	}
}
