package redrive_test

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dlqops/dlq/internal/testenv"
	"github.com/dlqops/dlq/internal/testenv/kafkatest"
)

// BenchmarkWorkerVsCeiling: the dlq-worker binary, run and timed as BenchmarkWorker runs
// it, against the strongest pipes this machine has, on the same broker and backlog:
//   - "franz": franzpipe, the same move as rawpipe on franz-go (pure Go, batched fetches,
//     asynchronous produce; acks=all, idempotent, the commit after every acknowledgement),
//     timed from its assignment to its commit;
//   - "franz-hop": franzpipe doing the worker's per-record hop (decode the envelope,
//     encode the next hop's headers, produce to the original topic and partition): the
//     prototype of the redrive path on franz-go (internal/prototype/franzredrive), without
//     the engine's bookkeeping;
//   - "raw": rawpipe, as in BenchmarkWorker, so that the two clients are compared on one
//     pipe in the same rounds (raw against franz: confluent-kafka-go against franz-go);
//   - "perf-read": Kafka's own ConsumerPerformance reading the backlog with a fresh group,
//     timed by the tool from its assignment to its last record (its fetch time);
//   - "perf-write": Kafka's own ProducerPerformance writing as many 1 KiB records to a
//     fresh topic of as many partitions (acks=all, idempotent), timed by the tool.
//
// A pipe reads and writes on the same two cores, so each perf tool alone bounds it from
// above: they are the ceiling, not a like-for-like pipe. The sides take turns for
// DLQ_BENCH_ROUNDS rounds (default 3), the order rotated every round; benchratio pairs ours
// with each round by round. peak-MiB is each process's peak resident memory (the JVM's
// included for the tools); cpu-us/rec, the CPU time of the whole process per record, is
// quoted for the Go processes only.
func BenchmarkWorkerVsCeiling(b *testing.B) {
	e := newBenchEnv(b)
	rounds := testenv.BenchSize(b, "DLQ_BENCH_ROUNDS", 3, 1)
	target := kafkatest.CreateTopic(b, e.bootstrap, benchPartitions, nil)
	dlq := e.seedDLQ(b, 1, target)
	dir := b.TempDir()
	libs := filepath.Join(testenv.CacheDir(b), "kafka", "libs", "*")
	sides := map[string]func(b *testing.B) procRun{
		"ours": func(b *testing.B) procRun {
			bin := os.Getenv("DLQ_BENCH_WORKER_BIN") // another build of dlq-worker, to compare
			if bin == "" {
				bin = goBuild(b, dir, "cmd/dlq-worker")
			}
			return e.runWorker(b, bin, dlq)
		},
		"franz": func(b *testing.B) procRun {
			return e.runFranzPipe(b, goBuild(b, dir, "internal/tools/franzpipe"), dlq, target, "-to", target)
		},
		"franz-hop": func(b *testing.B) procRun {
			return e.runFranzPipe(b, goBuild(b, dir, "internal/tools/franzpipe"), dlq, target)
		},
		"raw": func(b *testing.B) procRun {
			return e.runRawPipe(b, goBuild(b, dir, "internal/tools/rawpipe"), dlq, target)
		},
		"perf-read":  func(b *testing.B) procRun { return e.runConsumerPerf(b, libs, dlq) },
		"perf-write": func(b *testing.B) procRun { return e.runProducerPerf(b, libs) },
	}
	order := []string{"ours", "franz", "franz-hop", "raw", "perf-read", "perf-write"}
	for range rounds {
		for _, side := range order {
			b.Run(side, func(b *testing.B) {
				var runs procRuns
				for range b.N {
					runs.add(sides[side](b))
				}
				if strings.HasPrefix(side, "perf-") {
					runs.reportRate(b, e.n)
				} else {
					runs.report(b, e.n)
				}
			})
		}
		order = append(order[1:], order[0])
	}
}

// reportRate reports a Kafka tool's runs: rec/s and peak-MiB, without cpu-us/rec (a
// JVM's CPU time over one backlog is mostly its start-up and compiler).
func (r *procRuns) reportRate(b *testing.B, records int) {
	b.ReportMetric(float64(r.took.Nanoseconds())/float64(r.n), "ns/op")
	b.ReportMetric(float64(r.n*records)/r.took.Seconds(), "rec/s")
	b.ReportMetric(r.peakMiB, "peak-MiB")
}

// runFranzPipe runs franzpipe over dlq with a fresh group and args (-to target: a plain
// pipe; none: each record redriven to its original topic, target) and returns the time it
// reports, its peak RSS and its CPU time.
func (e *benchEnv) runFranzPipe(b *testing.B, bin, dlq, target string, args ...string) procRun {
	b.StopTimer()
	defer b.StartTimer()
	var stderr bytes.Buffer
	cmd := exec.Command(bin, append([]string{"-bootstrap", e.bootstrap, "-group", testenv.UniqueName("franz-"), "-from", dlq}, args...)...)
	cmd.Stderr = &stderr
	before := sum(e.highWatermarks(b, target))
	out, err := cmd.Output()
	if err != nil {
		b.Fatalf("franzpipe: %v\n%s", err, stderr.Bytes())
	}
	var res struct {
		ElapsedMs float64 `json:"elapsed_ms"`
		Records   int64   `json:"records"`
		PeakMiB   float64 `json:"peak_mib"`
	}
	if err := json.Unmarshal(out, &res); err != nil || res.Records != int64(e.n) {
		b.Fatalf("franzpipe moved %d records, want %d: %v\n%s", res.Records, e.n, err, out)
	}
	if landed := sum(e.highWatermarks(b, target)) - before; landed != int64(e.n) {
		b.Fatalf("franzpipe landed %d records on the target, want %d", landed, e.n)
	}
	return procRun{took: time.Duration(res.ElapsedMs * float64(time.Millisecond)), peakMiB: res.PeakMiB, cpu: cpuTime(cmd)}
}

// runJava runs a Kafka tool's class on the broker's own class path and returns its
// standard output, the process's peak RSS in MiB and its CPU time.
func runJava(b *testing.B, libs, class string, args ...string) (string, float64, time.Duration) {
	var stdout, stderr bytes.Buffer
	cmd := exec.Command("java", append([]string{"-Xms256m", "-Xmx1g", "-cp", libs, class}, args...)...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		b.Fatalf("%s: %v\n%s\n%s", class, err, stdout.Bytes(), stderr.Bytes())
	}
	peakKiB := cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss // Linux reports KiB
	return stdout.String(), float64(peakKiB) / 1024, cpuTime(cmd)
}

// runConsumerPerf reads the whole of dlq with Kafka's ConsumerPerformance and a fresh
// group, and returns the tool's fetch time (from its assignment to the last record).
func (e *benchEnv) runConsumerPerf(b *testing.B, libs, dlq string) procRun {
	b.StopTimer()
	defer b.StartTimer()
	out, peak, cpu := runJava(b, libs, "org.apache.kafka.tools.ConsumerPerformance", "--bootstrap-server", e.bootstrap,
		"--topic", dlq, "--num-records", strconv.Itoa(e.n), "--group", testenv.UniqueName("perf-"), "--timeout", "600000")
	stats, err := consumerPerfStats(out)
	if err != nil {
		b.Fatalf("ConsumerPerformance: %v\n%s", err, out)
	}
	if stats["data.consumed.in.nMsg"] != float64(e.n) {
		b.Fatalf("ConsumerPerformance read %v records, want %d\n%s", stats["data.consumed.in.nMsg"], e.n, out)
	}
	return procRun{took: time.Duration(stats["fetch.time.ms"] * float64(time.Millisecond)), peakMiB: peak, cpu: cpu}
}

// consumerPerfStats reads ConsumerPerformance's report: a header line of comma-separated
// names, then a line of values (two dates, then numbers).
func consumerPerfStats(out string) (map[string]float64, error) {
	r := csv.NewReader(strings.NewReader(out[strings.Index(out, "start.time"):]))
	r.TrimLeadingSpace = true
	rows, err := r.ReadAll()
	if err != nil || len(rows) < 2 {
		return nil, fmt.Errorf("no report (%v)", err)
	}
	stats := map[string]float64{}
	for i, name := range rows[0] {
		if v, err := strconv.ParseFloat(rows[1][i], 64); err == nil {
			stats[name] = v
		}
	}
	return stats, nil
}

// producerPerfTotal matches ProducerPerformance's last line: "N records sent, R
// records/sec (...".
var producerPerfTotal = regexp.MustCompile(`(?m)^(\d+) records sent, ([\d.]+) records/sec .*th\.$`)

// runProducerPerf writes e.n 1 KiB records to a fresh topic of the backlog's partitions
// with Kafka's ProducerPerformance (acks=all, idempotent, as fast as it can) and returns
// the time its rate implies.
func (e *benchEnv) runProducerPerf(b *testing.B, libs string) procRun {
	b.StopTimer()
	defer b.StartTimer()
	topic := kafkatest.CreateTopic(b, e.bootstrap, benchPartitions, nil)
	out, peak, cpu := runJava(b, libs, "org.apache.kafka.tools.ProducerPerformance", "--topic", topic,
		"--num-records", strconv.Itoa(e.n), "--record-size", strconv.Itoa(benchValueSize), "--throughput", "-1",
		"--producer-props", "bootstrap.servers="+e.bootstrap, "acks=all", "enable.idempotence=true")
	m := producerPerfTotal.FindStringSubmatch(out)
	if m == nil || m[1] != strconv.Itoa(e.n) {
		b.Fatalf("ProducerPerformance: no total for %d records\n%s", e.n, out)
	}
	rate, err := strconv.ParseFloat(m[2], 64)
	if err != nil || rate <= 0 {
		b.Fatalf("ProducerPerformance: rate %q: %v", m[2], err)
	}
	if landed := sum(e.highWatermarks(b, topic)); landed != int64(e.n) {
		b.Fatalf("ProducerPerformance landed %d records, want %d", landed, e.n)
	}
	return procRun{took: time.Duration(float64(e.n) / rate * float64(time.Second)), peakMiB: peak, cpu: cpu}
}
