package soak_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/routes"
	"github.com/dlqops/dlq/internal/store"
	"github.com/dlqops/dlq/internal/testenv"
	"github.com/dlqops/dlq/internal/testenv/kafkatest"
	"github.com/dlqops/dlq/internal/testenv/proctest"
)

// soak is the private stack every scenario shares: the binaries, one broker, one
// PostgreSQL server (a schema per scenario).
type soak struct {
	bin    string // folder holding dlq-worker and dlq-admin
	tmp    string // TMPDIR of the workers: their static-membership slot locks stay ours
	logs   string // the binaries' logs, kept after the run
	broker *kafkatest.Broker
	pg     *testenv.PGServer
	// delivery is the routes' delivery in the scenarios running now: every scenario runs
	// in both modes.
	delivery string
}

func (s *soak) bootstrap() string { return s.broker.Bootstrap() }

// logDir is a folder of its own for one scenario's logs, kept after the soak.
func (s *soak) logDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(s.logs, strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' {
			return r
		}
		return '_'
	}, t.Name()))
	require.NoError(t, os.MkdirAll(dir, 0o755))
	return dir
}

// buildBinaries builds dlq-worker and dlq-admin as a user would (go build, no -race).
// DLQ_SOAK_WORKER_BIN runs another build of dlq-worker instead (its audit too), to
// measure a change against the code before it on the same machine.
func buildBinaries(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, proctest.Build(dir, "github.com/dlqops/dlq/cmd/dlq-worker", "github.com/dlqops/dlq/cmd/dlq-admin"))
	if other := os.Getenv("DLQ_SOAK_WORKER_BIN"); other != "" {
		abs, err := filepath.Abs(other)
		require.NoError(t, err)
		worker := filepath.Join(dir, "dlq-worker")
		require.NoError(t, os.Remove(worker))
		require.NoError(t, os.Symlink(abs, worker))
		t.Logf("dlq-worker is %s", abs)
	}
	return dir
}

// schema creates a migrated schema of its own on the private server for one scenario.
func (s *soak) schema(t *testing.T) string {
	t.Helper()
	name := testenv.UniqueName("soak_")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, s.pg.URL())
	require.NoError(t, err)
	defer conn.Close(context.Background())
	_, err = conn.Exec(ctx, "CREATE SCHEMA "+name)
	require.NoError(t, err)
	url := testenv.WithSearchPath(t, s.pg.URL(), name)
	require.NoError(t, store.Migrate(ctx, url))
	return url
}

// session is the group session of every soak worker: a killed or stopped member is
// noticed within it, and the scenarios stay short.
const session = 10 * time.Second

// workerConfig writes o, on the soak's broker, in the scenario's log folder.
func (s *soak) workerConfig(t *testing.T, o proctest.WorkerConfig) string {
	t.Helper()
	o.Bootstrap, o.Session = s.bootstrap(), session
	return o.Write(t, s.logDir(t))
}

// start runs the binary name, killed when the scenario ends if still alive.
func (s *soak) start(t *testing.T, logPath string, name string, args ...string) *proctest.Proc {
	t.Helper()
	return proctest.Start(t, logPath, s.env(), filepath.Join(s.bin, name), args...)
}

// spawn starts the binary name; safe outside the test's goroutine (the caller ends it).
func (s *soak) spawn(logPath string, name string, args ...string) (*proctest.Proc, error) {
	return proctest.Spawn(logPath, s.env(), filepath.Join(s.bin, name), args...)
}

// env keeps the workers' static-membership slot locks in our TMPDIR.
func (s *soak) env() []string { return []string{"TMPDIR=" + s.tmp} }

func (s *soak) startWorker(t *testing.T, cfg, logPath string) *proctest.Proc {
	t.Helper()
	return s.start(t, logPath, "dlq-worker", "run", "--config", cfg)
}

// supervised is a worker restarted whenever it exits on its own, as Kubernetes or
// systemd would restart it; the restarts are reported.
type supervised struct {
	mu       sync.Mutex
	cur      *proctest.Proc
	restarts int
	exits    []string // why the worker exited on its own
	stopping bool
	stopped  chan struct{}
}

func (s *soak) superviseWorker(t *testing.T, cfg, logPath string) *supervised {
	t.Helper()
	first, err := s.spawn(logPath, "dlq-worker", "run", "--config", cfg)
	require.NoError(t, err)
	sv := &supervised{cur: first, stopped: make(chan struct{})}
	go func() {
		defer close(sv.stopped)
		for {
			sv.mu.Lock()
			cur := sv.cur
			sv.mu.Unlock()
			<-cur.Done()
			sv.mu.Lock()
			if sv.stopping {
				sv.mu.Unlock()
				return
			}
			sv.restarts++
			sv.exits = append(sv.exits, fmt.Sprint(cur.Err()))
			time.Sleep(time.Second) // a restart policy's back-off
			next, err := s.spawn(logPath, "dlq-worker", "run", "--config", cfg)
			if err != nil {
				sv.mu.Unlock()
				return
			}
			sv.cur = next
			sv.mu.Unlock()
		}
	}()
	t.Cleanup(func() { _ = sv.term() })
	return sv
}

func (sv *supervised) signal(sig syscall.Signal) {
	sv.mu.Lock()
	defer sv.mu.Unlock()
	sv.cur.Signal(sig)
}

// term stops supervising and terminates the worker.
func (sv *supervised) term() error {
	sv.mu.Lock()
	if sv.stopping {
		sv.mu.Unlock()
		return nil
	}
	sv.stopping = true
	cur := sv.cur
	sv.mu.Unlock()
	err := cur.Term(procGrace)
	cur.Kill()
	<-sv.stopped
	return err
}

// note says how often the worker had to be restarted, and why.
func (sv *supervised) note() string {
	sv.mu.Lock()
	defer sv.mu.Unlock()
	if sv.restarts == 0 {
		return ""
	}
	return fmt.Sprintf("; worker restarted %d time(s) after exiting on its own (%s)", sv.restarts, strings.Join(sv.exits, ", "))
}

// procGrace bounds a binary's graceful shutdown.
const procGrace = 2 * time.Minute

// seed fills topic with n DLQ records for target, keyed "<batch>-<i>", spread over
// partitions; every tenth is exhausted (parked) unless allExhausted says all are.
func (s *soak) seed(t *testing.T, topic, target, batch string, n, partitions int, allExhausted bool) {
	t.Helper()
	p, err := kafka.NewProducer(&kafka.ConfigMap{"bootstrap.servers": s.bootstrap(), "acks": "all", "linger.ms": 20})
	require.NoError(t, err)
	defer p.Close()
	acked := make(chan error, 1)
	go func() { // every delivery report must be a success
		var first error
		for delivered := 0; delivered < n; {
			if m, ok := (<-p.Events()).(*kafka.Message); ok {
				delivered++
				if m.TopicPartition.Error != nil && first == nil {
					first = m.TopicPartition.Error
				}
			}
		}
		acked <- first
	}()
	value := make([]byte, 100)
	for i := range n {
		retry := "1"
		if allExhausted || i%10 == 0 {
			retry = "5"
		}
		m := &kafka.Message{TopicPartition: kafka.TopicPartition{Topic: &topic, Partition: int32(i % partitions)},
			Key: []byte(fmt.Sprintf("%s-%d", batch, i)), Value: value,
			Headers: []kafka.Header{{Key: "retryCount", Value: []byte(retry)}, {Key: "originalTopic", Value: []byte(target)}}}
		for {
			err := p.Produce(m, nil)
			if err == nil {
				break
			}
			var kerr kafka.Error
			require.True(t, errors.As(err, &kerr) && kerr.Code() == kafka.ErrQueueFull, "produce: %v", err)
			time.Sleep(10 * time.Millisecond)
		}
	}
	require.NoError(t, <-acked, "seeding %s", topic)
}

// watermarks returns a function reading the high watermark of each partition of topic.
func (s *soak) watermarks(t *testing.T, topic string) func() map[int32]int64 {
	t.Helper()
	return tolerant(kafkatest.Watermarks(t, s.bootstrap(), topic))
}

// committed returns a function reading group's committed offsets on topic, through a
// consumer of the group that never joins it.
func (s *soak) committed(t *testing.T, topic, group string, partitions int) func() map[int32]int64 {
	t.Helper()
	return tolerant(kafkatest.Committed(t, s.bootstrap(), topic, group, partitions))
}

// tolerant is read that reads nothing (nil) while the broker restarts.
func tolerant(read func() (kafkatest.Offsets, error)) func() map[int32]int64 {
	return func() map[int32]int64 {
		m, _ := read()
		return m
	}
}

// waitDrained waits until group committed every partition of topic to its end.
func (s *soak) waitDrained(t *testing.T, topic, group string, partitions int, within time.Duration) {
	t.Helper()
	committed, end := s.committed(t, topic, group, partitions), s.watermarks(t, topic)
	require.Eventually(t, func() bool {
		want, got := end(), committed()
		if want == nil {
			return false
		}
		for p, off := range want {
			if got[p] < off {
				return false
			}
		}
		return true
	}, within, 200*time.Millisecond, "group %s did not commit %s to its end", group, topic)
}

// row is one line of the soak's table.
type row struct {
	scenario            string
	delivery            string
	records             int
	missing, duplicated int
	audit               string // what dlq-worker audit said
	verdict             string
	ok                  bool
	note                string
}

// auditLine matches the summary dlq-worker audit prints.
var auditLine = regexp.MustCompile(`(\d+) missing, (\d+) duplicated, (\d+) lost ranges`)

// audit runs `dlq-worker audit` and returns its summary, exit status and lost ranges.
func (s *soak) audit(t *testing.T, cfg, topic, group string) (summary string, passed bool, lostRanges int) {
	t.Helper()
	out, err := exec.Command(filepath.Join(s.bin, "dlq-worker"), "audit", "--config", cfg, "--topic", topic, "--group", group).CombinedOutput()
	m := auditLine.FindSubmatch(out)
	require.NotNil(t, m, "audit printed no summary (%v):\n%s", err, out)
	lostRanges, _ = strconv.Atoi(string(m[3]))
	var exit *exec.ExitError
	require.True(t, err == nil || errors.As(err, &exit), "audit: %v\n%s", err, out)
	t.Logf("audit: %s", bytes.TrimSpace(out))
	return string(m[0]), err == nil, lostRanges
}

// count is the independent count: every seeded key found on the target topic (copies)
// by a read_committed consumer, or held in PostgreSQL (parked or scheduled), read without
// the audit's code.
type count struct {
	onTarget map[string]int
	held     map[string]bool
}

func (s *soak) count(t *testing.T, target, dbURL, dlq string) count {
	t.Helper()
	c := count{onTarget: map[string]int{}, held: map[string]bool{}}
	// Read to the end of each partition: an exactly_once route's target holds records of
	// aborted transactions and transaction markers, which the consumer skips.
	cons, err := kafka.NewConsumer(&kafka.ConfigMap{"bootstrap.servers": s.bootstrap(), "group.id": testenv.UniqueName("count-"),
		"auto.offset.reset": "earliest", "enable.auto.commit": false, "isolation.level": "read_committed", "enable.partition.eof": true})
	require.NoError(t, err)
	defer cons.Close()
	end := s.watermarks(t, target)()
	require.NotNil(t, end)
	var tps []kafka.TopicPartition
	for p, high := range end {
		low, _, err := cons.QueryWatermarkOffsets(target, p, 30000)
		require.NoError(t, err)
		if high > low {
			tps = append(tps, kafka.TopicPartition{Topic: &target, Partition: p, Offset: kafka.Offset(low)})
		}
	}
	if len(tps) > 0 {
		require.NoError(t, cons.Assign(tps))
	}
	deadline := time.Now().Add(3 * time.Minute)
	for open := len(tps); open > 0; {
		require.True(t, time.Now().Before(deadline), "target %s not read to its end: %d partitions left", target, open)
		switch ev := cons.Poll(1000).(type) {
		case *kafka.Message:
			c.onTarget[string(ev.Key)]++
		case kafka.PartitionEOF:
			open--
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, dbURL)
	require.NoError(t, err)
	defer conn.Close(context.Background())
	rows, err := conn.Query(ctx, `SELECT key FROM dead_letters WHERE dlq_topic = $1 AND status IN ('parked', 'scheduled')`, dlq)
	require.NoError(t, err)
	for rows.Next() {
		var key []byte
		require.NoError(t, rows.Scan(&key))
		c.held[string(key)] = true
	}
	require.NoError(t, rows.Err())
	return c
}

// tally compares the count with the seeded keys.
func (c count) tally(keys []string) (missing, duplicated int) {
	for _, k := range keys {
		n := c.onTarget[k]
		if n == 0 && !c.held[k] {
			missing++
		}
		duplicated += max(0, n-1)
	}
	return missing, duplicated
}

func keys(batch string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%d", batch, i)
	}
	return out
}

// judge fills a row from the audit and the independent count. expectedLoss is how many
// records the scenario deletes unread (retention): the verdict then wants exactly those
// missing and the audit failing with lost ranges; otherwise it wants nothing missing and
// a clean audit.
func (s *soak) judge(t *testing.T, r *row, cfg, dlq, group, target, dbURL string, seeded []string, expectedLoss int) {
	t.Helper()
	summary, passed, lost := s.audit(t, cfg, dlq, group)
	r.records = len(seeded)
	r.missing, r.duplicated = s.count(t, target, dbURL, dlq).tally(seeded)
	r.audit = summary
	if !passed {
		r.audit += " (exit 1)"
	}
	switch {
	case s.delivery == routes.DeliveryExactlyOnce && r.duplicated > 0:
		r.verdict = "FAIL: duplicates seen by a read_committed consumer under exactly_once"
	case expectedLoss == 0 && r.missing == 0 && passed:
		r.verdict, r.ok = "pass", true
	case expectedLoss == 0 && r.missing > 0 && passed:
		r.verdict = "FAIL: silent loss"
	case expectedLoss == 0:
		r.verdict = "FAIL: loss or audit failure"
	case r.missing == expectedLoss && !passed && lost > 0:
		r.verdict, r.ok = "pass: loss reported with its ranges", true
	case passed:
		r.verdict = "FAIL: the audit passed a loss"
	default:
		r.verdict = fmt.Sprintf("FAIL: %d missing, %d deleted unread", r.missing, expectedLoss)
	}
}
