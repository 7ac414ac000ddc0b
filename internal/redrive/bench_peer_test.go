package redrive_test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/dlqops/dlq/internal/testenv"
	"github.com/dlqops/dlq/internal/testenv/kafkatest"
)

// BenchmarkWorkerVsPeer: the dlq-worker binary, run and timed as BenchmarkWorker runs it
// (acks=all, idempotence, its commit and ledger in its time), against peerpipe, a
// re-creation of the hot loop of the closest Go peer, Trendyol's kafka-cronsumer, tuned for
// speed (300 concurrent handlers, 10 ms batch timeout), in its own delivery
// mode ("peer": acks=0, each record's offset committed on a timer once read, before it is
// produced) and with acks=all ("peer-acks-all": still committing first, not idempotent).
// peerpipe times itself from its assignment to its last write. The three take turns on one
// backlog, each with a fresh group, for DLQ_BENCH_ROUNDS rounds (default 3), the order
// rotated every round; benchratio pairs ours with each peer mode round by round. lost-rec
// is how many records of the backlog a run did not land on the target (its log grew by
// fewer), dup-rec how many it landed more than once.
func BenchmarkWorkerVsPeer(b *testing.B) {
	e := newBenchEnv(b)
	rounds := testenv.BenchSize(b, "DLQ_BENCH_ROUNDS", 3, 1)
	target := kafkatest.CreateTopic(b, e.bootstrap, benchPartitions, nil)
	dlq := e.seedDLQ(b, 1, target)
	dir := b.TempDir()
	peer := func(acks string) func(b *testing.B) procRun {
		return func(b *testing.B) procRun {
			return e.runPeerPipe(b, goBuild(b, dir, "internal/tools/peerpipe"), dlq, target, acks)
		}
	}
	sides := map[string]func(b *testing.B) procRun{
		"ours": func(b *testing.B) procRun {
			bin := os.Getenv("DLQ_BENCH_WORKER_BIN") // another build of dlq-worker, to compare
			if bin == "" {
				bin = goBuild(b, dir, "cmd/dlq-worker")
			}
			return e.runWorker(b, bin, dlq)
		},
		"peer":          peer("none"),
		"peer-acks-all": peer("all"),
	}
	order := []string{"ours", "peer", "peer-acks-all"}
	for range rounds {
		for _, side := range order {
			b.Run(side, func(b *testing.B) {
				var runs procRuns
				var lost, dup int64
				for range b.N {
					before := sum(e.highWatermarks(b, target))
					runs.add(sides[side](b))
					landed := sum(e.highWatermarks(b, target)) - before
					lost, dup = lost+max(0, int64(e.n)-landed), dup+max(0, landed-int64(e.n))
				}
				if lost > 0 || dup > 0 {
					b.Logf("%s: %d records of %d backlogs lost, %d duplicated", side, lost, b.N, dup)
				}
				runs.report(b, e.n)
				b.ReportMetric(float64(lost), "lost-rec")
				b.ReportMetric(float64(dup), "dup-rec")
			})
		}
		order = append(order[1:], order[0])
	}
}

// runPeerPipe runs peerpipe from dlq to target with a fresh group in delivery mode acks
// ("none" or "all") and returns the time it reports and its peak RSS in MiB. It fails
// unless the peer read the whole backlog; what landed is counted by the caller.
func (e *benchEnv) runPeerPipe(b *testing.B, bin, dlq, target, acks string) procRun {
	b.StopTimer()
	defer b.StartTimer()
	var stderr bytes.Buffer
	cmd := exec.Command(bin, "-bootstrap", e.bootstrap, "-group", testenv.UniqueName("peer-"), "-from", dlq, "-to", target,
		"-acks", acks, "-concurrency", "300", "-batch-timeout", "10ms")
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		b.Fatalf("peerpipe: %v\n%s", err, stderr.Bytes())
	}
	var res struct {
		ElapsedMs float64 `json:"elapsed_ms"`
		Records   int64   `json:"records"`
		PeakMiB   float64 `json:"peak_mib"`
	}
	if err := json.Unmarshal(out, &res); err != nil || res.Records != int64(e.n) {
		b.Fatalf("peerpipe read %d records, want %d: %v\n%s\n%s", res.Records, e.n, err, out, stderr.Bytes())
	}
	if stderr.Len() > 0 {
		b.Logf("peerpipe: %s", stderr.Bytes())
	}
	return procRun{took: time.Duration(res.ElapsedMs * float64(time.Millisecond)), peakMiB: res.PeakMiB, cpu: cpuTime(cmd)}
}
