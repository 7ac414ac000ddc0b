package redrive_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"gopkg.in/yaml.v3"

	"github.com/dlqops/dlq/internal/headers"
	"github.com/dlqops/dlq/internal/redrive/routes"
	"github.com/dlqops/dlq/internal/store"
	"github.com/dlqops/dlq/internal/store/storetest"
	"github.com/dlqops/dlq/internal/testenv"
	"github.com/dlqops/dlq/internal/testenv/kafkatest"
)

// The redrive benchmarks (issue 5). Each parent seeds a DLQ of DLQ_BENCH_RECORDS (default
// 1,000,000) 1 KiB records once; its "raw" and "ours" sub-benchmarks then drain that same
// backlog with fresh consumer groups in the same run and report rec/s, which benchratio
// puts side by side. One iteration drains the whole backlog: run with -benchtime 1x.

// BenchmarkRedrive: a run over a backlog of due records, from its start to the last
// offset committed (the engine: decode, classify, re-encode headers, acks=all produce,
// offset tracking, ledger), against a raw consume→produce pipe with the same client
// settings and no bookkeeping. The two take turns on the same backlog for
// DLQ_BENCH_ROUNDS rounds (default 3), so that a slow spell of the shared machine does not
// decide the ratio; benchratio compares their medians.
func BenchmarkRedrive(b *testing.B) {
	e := newBenchEnv(b)
	rounds := testenv.BenchSize(b, "DLQ_BENCH_ROUNDS", 3, 1)
	target := kafkatest.CreateTopic(b, e.bootstrap, benchPartitions, nil)
	dlq := e.seedDLQ(b, 1, target)
	for range rounds {
		b.Run("raw", func(b *testing.B) {
			e.benchLoop(b, func() func() {
				return e.rawPipe(b, dlq, kafkatest.CreateTopic(b, e.bootstrap, benchPartitions, nil))
			})
		})
		b.Run("ours", func(b *testing.B) {
			st := storetest.New(b)
			e.benchEngine(b, dlq, func() *store.Store { return st }, func(*store.Store) {
				// Every record went to the target: its log grows by a backlog per run.
				if got := sum(e.highWatermarks(b, target)); got%int64(e.n) != 0 || got == 0 {
					b.Fatalf("target holds %d records, want a multiple of %d", got, e.n)
				}
			})
		})
	}
}

// BenchmarkAllParked: a run where every record has exhausted its retries, so all of them
// are parked in PostgreSQL, against a raw pgx COPY of the same rows into a bare table (no
// constraint, no index).
func BenchmarkAllParked(b *testing.B) {
	e := newBenchEnv(b)
	const origin = "orders" // never looked up: exhausted records are parked before routing
	dlq := e.seedDLQ(b, routes.DefaultMaxRetries, origin)
	b.Run("raw", func(b *testing.B) {
		e.benchLoop(b, func() func() {
			_, url := storetest.NewWithURL(b)
			pool, err := pgxpool.New(context.Background(), url)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(pool.Close)
			if _, err := pool.Exec(context.Background(), `CREATE TABLE bare AS SELECT `+joinColumns()+
				` FROM dead_letters WITH NO DATA`); err != nil {
				b.Fatal(err)
			}
			return func() { e.rawPark(b, pool, dlq, origin) }
		})
	})
	b.Run("ours", func(b *testing.B) {
		e.benchEngine(b, dlq, func() *store.Store { return storetest.New(b) }, func(st *store.Store) {
			n, err := st.Count(context.Background(), store.Filter{Statuses: []store.Status{store.StatusParked}})
			if err != nil || n != int64(e.n) {
				b.Fatalf("%d rows parked, want %d: %v", n, e.n, err)
			}
		})
	})
}

// BenchmarkWorkerRSS: the peak resident memory (VmHWM) of the dlq-worker binary draining
// the backlog of BenchmarkRedrive on its cron schedule, from start-up until the group
// committed the whole DLQ. It must stay flat as the backlog grows (compare 100k and 1M).
// Its rec/s counts from the process start, so it includes start-up and the group join.
func BenchmarkWorkerRSS(b *testing.B) {
	e := newBenchEnv(b)
	target := kafkatest.CreateTopic(b, e.bootstrap, benchPartitions, nil)
	dlq := e.seedDLQ(b, 1, target)
	bin := filepath.Join(b.TempDir(), "dlq-worker")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/dlqops/dlq/cmd/dlq-worker").CombinedOutput(); err != nil {
		b.Fatalf("go build dlq-worker: %v\n%s", err, out)
	}
	b.Run("ours", func(b *testing.B) {
		var peak float64
		e.benchLoop(b, func() func() {
			_, url := storetest.NewWithURL(b)
			rc := benchRouteConfig(dlq)
			cfg := writeWorkerConfig(b, url, e.bootstrap, rc)
			return func() { peak = max(peak, e.runWorker(b, bin, cfg, rc)) }
		})
		b.ReportMetric(peak, "peak-MiB")
	})
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

// rawPark copies e.n parked rows, as the engine would store them, in one COPY.
func (e *benchEnv) rawPark(b *testing.B, pool *pgxpool.Pool, dlq, origin string) {
	now := time.Now()
	i := -1
	n, err := pool.CopyFrom(context.Background(), pgx.Identifier{"bare"}, parkColumns, pgx.CopyFromFunc(func() ([]any, error) {
		if i++; i == e.n {
			return nil, nil
		}
		env := e.benchEnvelope(i, routes.DefaultMaxRetries, origin)
		hs := headers.Encode(nil, env, headers.DefaultEncodeOptions())
		keys, values := make([][]byte, len(hs)), make([][]byte, len(hs))
		for j, h := range hs {
			keys[j], values[j] = []byte(h.Key), h.Value
		}
		return []any{dlq, int32(i % benchPartitions), int64(i / benchPartitions),
			env.OriginalTopic, env.OriginalPartition, env.OriginalOffset, env.OriginalTimestamp, e.seededAt,
			benchKey(i), benchValue, keys, values,
			env.RetryCount, env.ErrorClass, env.ErrorMessage, string(store.ReasonExhausted), string(store.StatusParked),
			benchRoute, nil, now, now, "redrive"}, nil
	}))
	if err != nil || n != int64(e.n) {
		b.Fatalf("raw COPY: %d of %d rows: %v", n, e.n, err)
	}
}

// writeWorkerConfig writes a dlq-worker configuration with rc as its only route, on a
// cron tick every second, and returns its path.
func writeWorkerConfig(b *testing.B, dbURL, bootstrap string, rc routes.Config) string {
	cfg := map[string]any{
		"log":      map[string]any{"level": "warn", "format": "json"},
		"http":     map[string]any{"listen": "127.0.0.1:0"}, // completion is read from Kafka
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

// runWorker runs the binary until rc's group committed the whole DLQ and returns its peak
// RSS in MiB, read just before SIGTERM.
func (e *benchEnv) runWorker(b *testing.B, bin, cfg string, rc routes.Config) float64 {
	logPath := filepath.Join(b.TempDir(), "worker.log")
	logf, err := os.Create(logPath)
	if err != nil {
		b.Fatal(err)
	}
	defer logf.Close()
	cmd := exec.Command(bin, "run", "--config", cfg)
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
	peak, err := peakRSS(cmd.Process.Pid)
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
	return peak
}
