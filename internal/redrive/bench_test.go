package redrive_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"gopkg.in/yaml.v3"

	"github.com/dlqops/dlq/internal/headers"
	"github.com/dlqops/dlq/internal/kafkaclient"
	"github.com/dlqops/dlq/internal/procstat"
	"github.com/dlqops/dlq/internal/redrive"
	"github.com/dlqops/dlq/internal/routes"
	"github.com/dlqops/dlq/internal/store"
	"github.com/dlqops/dlq/internal/store/storetest"
	"github.com/dlqops/dlq/internal/testenv"
	"github.com/dlqops/dlq/internal/testenv/kafkatest"
)

// The redrive benchmarks. Each parent seeds a DLQ of DLQ_BENCH_RECORDS (default
// 1,000,000) 1 KiB records once; its "raw" and "ours" sub-benchmarks then drain that same
// backlog with fresh consumer groups in the same run and report rec/s, which benchratio
// puts side by side. One iteration drains the whole backlog: run with -benchtime 1x.

// BenchmarkRedrive: a run over a backlog of due records, from its start to the last
// offset committed (the engine: decode, classify, re-encode headers, acks=all produce,
// offset tracking, ledger), against a raw consume→produce pipe with the same client
// settings and no bookkeeping. The two take turns on the same backlog for
// DLQ_BENCH_ROUNDS rounds (default 3), the order swapped every round, so that a slow spell
// of the shared machine does not decide the ratio; benchratio takes the median of the
// per-round ratios.
func BenchmarkRedrive(b *testing.B) {
	e := newBenchEnv(b)
	rounds := testenv.BenchSize(b, "DLQ_BENCH_ROUNDS", 3, 1)
	target := kafkatest.CreateTopic(b, e.bootstrap, benchPartitions, nil)
	dlq := e.seedDLQ(b, 1, target)
	sides := map[string]func(b *testing.B){
		"raw": func(b *testing.B) {
			e.benchLoop(b, func() func() {
				return e.rawPipe(b, dlq, kafkatest.CreateTopic(b, e.bootstrap, benchPartitions, nil))
			})
		},
		"ours": func(b *testing.B) {
			st := storetest.New(b)
			e.benchEngine(b, dlq, func() *store.Store { return st }, func(*store.Store) {
				// Every record went to the target: its log grows by a backlog per run.
				if got := sum(e.highWatermarks(b, target)); got%int64(e.n) != 0 || got == 0 {
					b.Fatalf("target holds %d records, want a multiple of %d", got, e.n)
				}
			})
		},
	}
	order := []string{"raw", "ours"}
	for range rounds {
		for _, side := range order {
			b.Run(side, sides[side])
		}
		slices.Reverse(order)
	}
}

// BenchmarkAllParked: a run where every record has exhausted its retries, so all of them
// are parked in PostgreSQL, against a raw pipe that reads the same records from Kafka and
// COPYs the same rows, in one streamed COPY, into a bare table with the same unique
// constraint (no other index, no bookkeeping). They take turns on one backlog for
// DLQ_BENCH_ROUNDS rounds (default 3), the order swapped every round.
func BenchmarkAllParked(b *testing.B) {
	e := newBenchEnv(b)
	rounds := testenv.BenchSize(b, "DLQ_BENCH_ROUNDS", 3, 1)
	const origin = "orders" // never looked up: exhausted records are parked before routing
	dlq := e.seedDLQ(b, routes.DefaultMaxRetries, origin)
	sides := map[string]func(b *testing.B){
		"raw": func(b *testing.B) {
			e.benchLoop(b, func() func() { return e.rawPark(b, dlq) })
		},
		"ours": func(b *testing.B) {
			e.benchEngine(b, dlq, func() *store.Store { return storetest.New(b) }, func(st *store.Store) {
				n, err := st.Count(context.Background(), store.Filter{Statuses: []store.Status{store.StatusParked}})
				if err != nil || n != int64(e.n) {
					b.Fatalf("%d rows parked, want %d: %v", n, e.n, err)
				}
			})
		},
	}
	order := []string{"raw", "ours"}
	for range rounds {
		for _, side := range order {
			b.Run(side, sides[side])
		}
		slices.Reverse(order)
	}
}

// BenchmarkWorker: the dlq-worker binary as users run it (one route on a cron schedule
// every second, backoff none, everything else as documented) against rawpipe, a process
// that moves the same backlog to the same target with acks=all, idempotence and the same
// read-ahead and producer queue sizes, and no bookkeeping. They take turns on one backlog,
// each with a fresh group, for DLQ_BENCH_ROUNDS rounds (default 3), the order rotated every
// round; benchratio pairs each round's sides. Each process times itself: ours from the
// start of its run (after the cron tick) to its "run finished" (reading the high
// watermarks, every record, the commit and the ledger included), rawpipe from its
// assignment to its commit. Process start-up and the group join are outside both. peak-MiB is each process's VmHWM (ours once the DLQ is committed): it
// must stay flat as the backlog grows (compare 100k and 1M). A third side, "poll", is
// the same binary on read_path poll (confluent-kafka-go's public API only), so that the
// fast path's worth is quoted from the same rounds.
func BenchmarkWorker(b *testing.B) {
	e := newBenchEnv(b)
	rounds := testenv.BenchSize(b, "DLQ_BENCH_ROUNDS", 3, 1)
	target := kafkatest.CreateTopic(b, e.bootstrap, benchPartitions, nil)
	dlq := e.seedDLQ(b, 1, target)
	dir := b.TempDir()
	worker := func(b *testing.B) string {
		if bin := os.Getenv("DLQ_BENCH_WORKER_BIN"); bin != "" { // another build of dlq-worker, to compare
			return bin
		}
		return goBuild(b, dir, "cmd/dlq-worker")
	}
	sides := map[string]func(b *testing.B) procRun{
		"ours": func(b *testing.B) procRun { return e.runWorker(b, worker(b), dlq) },
		"poll": func(b *testing.B) procRun {
			return e.runWorker(b, worker(b), dlq, "DLQ_WORKER_READ_PATH="+redrive.ReadPathPoll)
		},
		"raw": func(b *testing.B) procRun {
			return e.runRawPipe(b, goBuild(b, dir, "internal/tools/rawpipe"), dlq, target)
		},
	}
	order := []string{"raw", "ours", "poll"}
	if before := os.Getenv("DLQ_BENCH_BEFORE_BIN"); before != "" {
		// Another build of dlq-worker (main's, before a change) as a fourth side in the
		// same rounds: benchratio pairs ours with it round by round, as with raw.
		sides["before"] = func(b *testing.B) procRun { return e.runWorker(b, before, dlq) }
		order = append(order, "before")
	}
	for range rounds {
		for _, side := range order {
			b.Run(side, func(b *testing.B) {
				var runs procRuns
				for range b.N {
					runs.add(sides[side](b))
				}
				runs.report(b, e.n)
			})
		}
		order = append(order[1:], order[0]) // rotated: each side runs first, last, between
	}
	// Every record went to the target once per run of either side.
	if got := sum(e.highWatermarks(b, target)); got%int64(e.n) != 0 || got == 0 {
		b.Fatalf("target holds %d records, want a multiple of %d", got, e.n)
	}
}

// goBuild builds the command at path (relative to the module) into dir once and returns
// the binary's path.
func goBuild(b *testing.B, dir, path string) string {
	bin := filepath.Join(dir, filepath.Base(path))
	if _, err := os.Stat(bin); err == nil {
		return bin
	}
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/dlqops/dlq/"+path).CombinedOutput(); err != nil {
		b.Fatalf("go build %s: %v\n%s", path, err, out)
	}
	return bin
}

// benchLoop runs b.N iterations, each prepared untimed by setup, whose returned function
// is timed, and reports rec/s for a backlog per iteration.
func (e *benchEnv) benchLoop(b *testing.B, setup func() func()) {
	for range b.N {
		b.StopTimer()
		op := setup()
		b.StartTimer()
		op()
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N*e.n)/b.Elapsed().Seconds(), "rec/s")
}

// benchEngine times engine runs over dlq, each with a fresh group on the store newStore
// returns, until everything is committed; check verifies the outcome, untimed.
func (e *benchEnv) benchEngine(b *testing.B, dlq string, newStore func() *store.Store, check func(*store.Store)) {
	var st *store.Store
	var stop func()
	e.benchLoop(b, func() func() {
		if stop != nil {
			stop()
			check(st)
		}
		st = newStore()
		rc := benchRouteConfig(dlq)
		eng := e.startBenchEngine(b, st, rc)
		stop = func() { stopEngine(b, eng) }
		return func() { e.runUntilDrained(b, eng, rc) }
	})
	stop()
	check(st)
}

// rawPark prepares, untimed, a fresh table with dead_letters' columns and its unique
// constraint and a consumer of dlq, and returns the pipe to time: read every record of dlq
// and COPY its parked row, as the engine would store it, in one streamed COPY.
func (e *benchEnv) rawPark(b *testing.B, dlq string) func() {
	_, url := storetest.NewWithURL(b)
	pool, err := pgxpool.New(context.Background(), url)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(pool.Close)
	if _, err := pool.Exec(context.Background(), `CREATE TABLE bare AS SELECT `+joinColumns()+
		` FROM dead_letters WITH NO DATA; ALTER TABLE bare ADD UNIQUE (dlq_topic, dlq_partition, dlq_offset)`); err != nil {
		b.Fatal(err)
	}
	cc := kafkaclient.ConsumerConfig(e.kafka, testenv.UniqueName("raw-"))
	c, err := kafka.NewConsumer(&cc)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = c.Close() })
	if _, err := c.GetMetadata(&dlq, false, 10_000); err != nil {
		b.Fatal(err)
	}
	hw := e.highWatermarks(b, dlq)
	return func() {
		tps := make([]kafka.TopicPartition, benchPartitions)
		for i := range tps {
			tps[i] = kafka.TopicPartition{Topic: &dlq, Partition: int32(i), Offset: 0} // the log start: fetching starts without an offset query
		}
		if err := c.Assign(tps); err != nil {
			b.Fatal(err)
		}
		left := sum(hw)
		now := time.Now()
		n, err := pool.CopyFrom(context.Background(), pgx.Identifier{"bare"}, parkColumns, pgx.CopyFromFunc(func() ([]any, error) {
			for left > 0 {
				ev := c.Poll(100)
				m, ok := ev.(*kafka.Message)
				if !ok {
					if ke, isErr := ev.(kafka.Error); isErr && ke.IsFatal() {
						return nil, ke
					}
					continue
				}
				left--
				env := headers.DecodeOf(m.Headers).Envelope
				keys, values := make([][]byte, len(m.Headers)), make([][]byte, len(m.Headers))
				for j, h := range m.Headers {
					keys[j], values[j] = []byte(h.Key), h.Value
				}
				return []any{dlq, m.TopicPartition.Partition, int64(m.TopicPartition.Offset),
					env.OriginalTopic, env.OriginalPartition, env.OriginalOffset, env.OriginalTimestamp, m.Timestamp,
					m.Key, m.Value, keys, values,
					env.RetryCount, env.ErrorClass, env.ErrorMessage, string(store.ReasonExhausted), string(store.StatusParked),
					benchRoute, nil, now, now, "redrive"}, nil
			}
			return nil, nil
		}))
		if err != nil || n != int64(e.n) {
			b.Fatalf("raw COPY: %d of %d rows: %v", n, e.n, err)
		}
	}
}

// writeWorkerConfig writes a dlq-worker configuration with rc as its only route, on a
// cron tick every second, and returns its path.
func writeWorkerConfig(b *testing.B, dbURL, bootstrap string, rc routes.Config) string {
	cfg := map[string]any{
		"log":      map[string]any{"level": "info", "format": "json"}, // "run finished" is timed
		"http":     map[string]any{"listen": "127.0.0.1:0"},           // completion is read from Kafka
		"database": map[string]any{"url": dbURL},
		"kafka":    map[string]any{"bootstrap_servers": bootstrap},
		"routes": []map[string]any{{"name": rc.Name, "topics": rc.Topics, "group": rc.Group,
			"schedule": "* * * * * *", "backoff": "none"}},
	}
	out, err := yaml.Marshal(cfg)
	if err != nil {
		b.Fatal(err)
	}
	path := filepath.Join(b.TempDir(), "worker.yaml")
	if err := os.WriteFile(path, out, 0o600); err != nil {
		b.Fatal(err)
	}
	return path
}

// procRun is what one run of a process reports: the time it took for the backlog, its
// peak RSS in MiB, and the CPU time (user and system, every thread) of the whole process,
// its start, group join and exit included.
type procRun struct {
	took    time.Duration
	peakMiB float64
	cpu     time.Duration
}

// procRuns adds up the runs of one side in one round.
type procRuns struct {
	n         int
	took, cpu time.Duration
	peakMiB   float64
}

func (r *procRuns) add(run procRun) {
	r.n++
	r.took, r.cpu, r.peakMiB = r.took+run.took, r.cpu+run.cpu, max(r.peakMiB, run.peakMiB)
}

// report reports the runs of a backlog of records each: rec/s, peak-MiB and cpu-us/rec,
// the process's CPU time per record, which a busy machine skews less than its rate.
func (r *procRuns) report(b *testing.B, records int) {
	b.ReportMetric(float64(r.took.Nanoseconds())/float64(r.n), "ns/op")
	b.ReportMetric(float64(r.n*records)/r.took.Seconds(), "rec/s")
	b.ReportMetric(r.peakMiB, "peak-MiB")
	b.ReportMetric(float64(r.cpu.Microseconds())/float64(r.n*records), "cpu-us/rec")
}

// cpuTime is the CPU time of the exited process of cmd.
func cpuTime(cmd *exec.Cmd) time.Duration {
	return cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
}

// runWorker runs the binary (env added to its environment) on a fresh schema and group
// until the group committed the whole DLQ, stops it, and returns the time its runs took
// (every record redriven), its peak RSS, read just before SIGTERM, and its CPU time.
func (e *benchEnv) runWorker(b *testing.B, bin, dlq string, env ...string) procRun {
	b.StopTimer()
	defer b.StartTimer()
	_, url := storetest.NewWithURL(b)
	rc := benchRouteConfig(dlq)
	cfg := writeWorkerConfig(b, url, e.bootstrap, rc)
	logPath := filepath.Join(b.TempDir(), "worker.log")
	logf, err := os.Create(logPath)
	if err != nil {
		b.Fatal(err)
	}
	defer logf.Close()
	cmd := exec.Command(bin, "run", "--config", cfg)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	fail := func(format string, args ...any) {
		_ = cmd.Process.Kill()
		<-exited
		log, _ := os.ReadFile(logPath)
		b.Fatalf(format+"\nworker log:\n%s", append(args, log)...)
	}
	deadline := time.Now().Add(30 * time.Minute)
	for !e.drained(b, rc.Group, rc.Topics[0]) {
		select {
		case err := <-exited:
			exited <- err
			fail("dlq-worker exited before draining the DLQ: %v", err)
		case <-time.After(250 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			fail("DLQ not drained after 30 min")
		}
	}
	peak, err := procstat.PeakRSSMiB(cmd.Process.Pid)
	if err != nil {
		fail("read peak RSS: %v", err)
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-exited:
		if err != nil {
			log, _ := os.ReadFile(logPath)
			b.Fatalf("dlq-worker after SIGTERM: %v\n%s", err, log)
		}
	case <-time.After(time.Minute):
		fail("dlq-worker still running a minute after SIGTERM")
	}
	took, redriven, err := runTime(logPath)
	if err != nil || redriven != int64(e.n) {
		log, _ := os.ReadFile(logPath)
		b.Fatalf("runs redrove %d records, want %d: %v\nworker log:\n%s", redriven, e.n, err, log)
	}
	return procRun{took: took, peakMiB: peak, cpu: cpuTime(cmd)}
}

// runTime adds up the worker's "run finished" lines that did some work: their elapsed
// time and the records they redrove.
func runTime(logPath string) (time.Duration, int64, error) {
	f, err := os.Open(logPath)
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	var took float64 // ms
	var redriven int64
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var l struct {
			Message                     string
			ElapsedMs                   float64 `json:"elapsed_ms"`
			Redriven, Scheduled, Parked int64
		}
		if json.Unmarshal(sc.Bytes(), &l) != nil || l.Message != "run finished" || l.Redriven+l.Scheduled+l.Parked == 0 {
			continue
		}
		if l.ElapsedMs <= 0 {
			return 0, 0, fmt.Errorf("a run finished line with records has no elapsed_ms: %s", sc.Bytes())
		}
		took += l.ElapsedMs
		redriven += l.Redriven
	}
	return time.Duration(took * float64(time.Millisecond)), redriven, sc.Err()
}

// runRawPipe runs rawpipe from dlq to target with a fresh group and returns the time it
// reports, its peak RSS and its CPU time.
func (e *benchEnv) runRawPipe(b *testing.B, bin, dlq, target string) procRun {
	b.StopTimer()
	defer b.StartTimer()
	var stderr bytes.Buffer
	cmd := exec.Command(bin, "-bootstrap", e.bootstrap, "-group", testenv.UniqueName("raw-"), "-from", dlq, "-to", target)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		b.Fatalf("rawpipe: %v\n%s", err, stderr.Bytes())
	}
	var res struct {
		ElapsedMs float64 `json:"elapsed_ms"`
		Records   int64   `json:"records"`
		PeakMiB   float64 `json:"peak_mib"`
	}
	if err := json.Unmarshal(out, &res); err != nil || res.Records != int64(e.n) {
		b.Fatalf("rawpipe moved %d records, want %d: %v\n%s", res.Records, e.n, err, out)
	}
	return procRun{took: time.Duration(res.ElapsedMs * float64(time.Millisecond)), peakMiB: res.PeakMiB, cpu: cpuTime(cmd)}
}
