package jobs_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/dlqops/dlq/internal/delivery"
	"github.com/dlqops/dlq/internal/jobs"
	"github.com/dlqops/dlq/internal/jobs/jobstest"
	"github.com/dlqops/dlq/internal/kafkaclient"
	"github.com/dlqops/dlq/internal/routes"
	"github.com/dlqops/dlq/internal/store"
	"github.com/dlqops/dlq/internal/store/storetest"
	"github.com/dlqops/dlq/internal/testenv"
	"github.com/dlqops/dlq/internal/testenv/kafkatest"
)

// BenchmarkBulkReplay: a bulk replay job of DLQ_BENCH_RECORDS (default 100,000) parked
// 1 KiB records, from submission to the job's end (leases, acks=all produce, each replay's
// outcome with its offset, audit rows, progress): rec/s; and to the end of the fold that
// follows it, once every outcome is in its record's row: folded-rec/s. Against a raw loop
// that selects the same rows page by page and produces them with the same producer
// settings, tracking nothing (both its figures are the same). The two take turns for DLQ_BENCH_ROUNDS rounds (default 3), the order swapped every
// round, each side starting from the same vacuumed and analyzed table (the reset is not
// timed), so that a slow spell of the shared machine does not decide the ratio; benchratio
// takes the median of the per-round ratios. cpu-us/rec is the CPU each side spent per
// record to the job's end, which the machine's load skews less than the rates: this
// process's (both sides run in it; the idle runner's polling is counted in both) plus
// that of the side's PostgreSQL sessions (db-cpu-us/rec, read from /proc when the server
// runs on this host; not reported otherwise).
func BenchmarkBulkReplay(b *testing.B) {
	ctx := context.Background()
	n := testenv.BenchSize(b, "DLQ_BENCH_RECORDS", 100_000, 1)
	rounds := testenv.BenchSize(b, "DLQ_BENCH_ROUNDS", 3, 1)
	bootstrap := testenv.KafkaBootstrap(b)
	st, url := storetest.NewWithURL(b)
	rc, err := pgxpool.ParseConfig(url)
	if err != nil {
		b.Fatal(err)
	}
	rc.ConnConfig.RuntimeParams["application_name"] = "bench-raw"
	pool, err := pgxpool.NewWithConfig(ctx, rc)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(pool.Close)
	seed(b, pool, n)
	target := kafkatest.CreateTopic(b, bootstrap, 3, nil)
	cm := delivery.ProducerConfig(kafkaclient.Config{BootstrapServers: bootstrap})
	p, err := kafka.NewProducer(&cm)
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	// The runner's pool is sized as dlq-worker's (database.max_conns' default), not as a
	// test store's: a job settles several batches at once.
	db := store.Config{URL: url}
	db.WithDefaults()
	pc, err := pgxpool.ParseConfig(url)
	if err != nil {
		b.Fatal(err)
	}
	pc.MaxConns = db.MaxConns
	pc.ConnConfig.RuntimeParams["application_name"] = "bench-ours"
	workerPool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(workerPool.Close)
	// It looks for jobs every 100 ms: dlq-worker's second would delay the job's start, and
	// the tests' 20 ms made its idle slots' polling a fifth of the job process's CPU.
	jobstest.StartRunner(b, jobs.Config{Store: store.New(workerPool), Routes: []routes.Config{jobstest.Route("orders")}, Owner: "bench",
		Lease: 30 * time.Second, Poll: 100 * time.Millisecond})
	// reset parks the rows again and vacuums away the dead versions that leaves.
	reset := func(b *testing.B) {
		for _, q := range []string{`UPDATE dead_letters SET status = 'parked', job_id = NULL, replay_id = NULL,
			target_topic = NULL, produced_partition = NULL, produced_offset = NULL
			WHERE status <> 'parked'`, `VACUUM ANALYZE dead_letters`} {
			if _, err := pool.Exec(ctx, q); err != nil {
				b.Fatal(err)
			}
		}
	}
	// folded waits until the runner has folded every replay outcome into its record's row,
	// after the job (raw has nothing to fold).
	folded := func(b *testing.B) {
		for {
			var left bool
			if err := pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM replay_leases)`).Scan(&left); err != nil {
				b.Fatal(err)
			}
			if !left {
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	sides := map[string]func(b *testing.B){
		"raw":  func(b *testing.B) { rawReplay(b, pool, p, target, n) },
		"ours": func(b *testing.B) { replayJob(b, st, target, n) },
	}
	order := []string{"raw", "ours"}
	for range rounds {
		for _, side := range order {
			b.Run(side, func(b *testing.B) {
				var folding, cpu, dbCPU time.Duration
				dbKnown := true
				for range b.N {
					b.StopTimer()
					reset(b)
					db0, known0 := sessionsCPU(b, pool, "bench-"+side)
					cpu0 := processCPU()
					b.StartTimer()
					sides[side](b)
					b.StopTimer()
					cpu += processCPU() - cpu0
					db1, known1 := sessionsCPU(b, pool, "bench-"+side)
					dbCPU += cpuSince(db0, db1)
					dbKnown = dbKnown && known0 && known1
					start := time.Now()
					folded(b)
					folding += time.Since(start)
				}
				b.ReportMetric(float64(b.N*n)/b.Elapsed().Seconds(), "rec/s")
				// Until every record's row says replayed: the job and the fold after it.
				b.ReportMetric(float64(b.N*n)/(b.Elapsed()+folding).Seconds(), "folded-rec/s")
				if dbKnown {
					b.ReportMetric(float64((cpu+dbCPU).Microseconds())/float64(b.N*n), "cpu-us/rec")
					b.ReportMetric(float64(dbCPU.Microseconds())/float64(b.N*n), "db-cpu-us/rec")
				}
			})
		}
		slices.Reverse(order)
	}
}

// replayJob submits a bulk replay of every parked record to target and waits for its end.
func replayJob(b *testing.B, st *store.Store, target string, n int) {
	ctx := context.Background()
	job, _, err := st.SubmitJob(ctx, store.JobRequest{JobSpec: store.JobSpec{Kind: store.JobReplay,
		Filter: &store.Filter{Statuses: []store.Status{store.StatusParked}}, TargetTopic: target,
		ConfirmedCount: int64(n)}}, store.Actor{Name: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	for job.Status == store.JobPending || job.Status == store.JobRunning {
		time.Sleep(10 * time.Millisecond)
		if job, err = st.GetJob(ctx, job.ID); err != nil {
			b.Fatal(err)
		}
	}
	if job.Status != store.JobSucceeded || job.Done != int64(n) {
		b.Fatalf("job %s: %d of %d done: %s", job.Status, job.Done, n, job.Error)
	}
}

// rawReplay selects the parked rows by keyset pages and produces each, then waits for
// every delivery report.
func rawReplay(b *testing.B, pool *pgxpool.Pool, p *kafka.Producer, target string, n int) {
	ctx := context.Background()
	reports := make(chan kafka.Event, 10_000)
	sent, acked := 0, 0
	wait := func(upTo int) {
		for acked < upTo {
			m := (<-reports).(*kafka.Message)
			if m.TopicPartition.Error != nil {
				b.Fatal(m.TopicPartition.Error)
			}
			acked++
		}
	}
	var last int64
	for {
		rows, err := pool.Query(ctx, `SELECT id, key, value, header_keys, header_values, record_timestamp
			FROM dead_letters WHERE id > $1 AND status = 'parked' ORDER BY id LIMIT 1000`, last)
		if err != nil {
			b.Fatal(err)
		}
		var (
			key, value []byte
			hk, hv     [][]byte
			ts         time.Time
			page       int
		)
		_, err = pgx.ForEachRow(rows, []any{&last, &key, &value, &hk, &hv, &ts}, func() error {
			hs := make([]kafka.Header, len(hk))
			for i := range hk {
				hs[i] = kafka.Header{Key: string(hk[i]), Value: hv[i]}
			}
			page++
			sent++
			// Keep no more reports outstanding than the channel holds.
			wait(sent - cap(reports))
			return p.Produce(&kafka.Message{TopicPartition: kafka.TopicPartition{Topic: &target, Partition: kafka.PartitionAny},
				Key: key, Value: value, Headers: hs, Timestamp: ts}, reports)
		})
		if err != nil {
			b.Fatal(err)
		}
		if page == 0 {
			break
		}
	}
	wait(sent)
	if sent != n {
		b.Fatalf("raw replay sent %d of %d", sent, n)
	}
}

// seed parks n records of 1 KiB values server-side.
func seed(b testing.TB, pool *pgxpool.Pool, n int) {
	start := time.Now()
	_, err := pool.Exec(context.Background(), fmt.Sprintf(`INSERT INTO dead_letters (dlq_topic, dlq_partition, dlq_offset,
		original_topic, original_partition, original_offset, original_timestamp, record_timestamp, key, value,
		header_keys, header_values, retry_count, error_class, error_message, reason, status, route,
		stored_at, changed_at, changed_by)
		SELECT 'orders.dlq', g %% 3, g, 'orders', g %% 3, g, now(), now(), convert_to('key-' || g, 'UTF8'),
			decode(repeat('ab', 1024), 'hex'), ARRAY['retryCount'::bytea, 'traceparent'::bytea], ARRAY['5'::bytea, NULL],
			5, 'java.io.IOException', 'downstream unavailable', 'exhausted', 'parked', 'orders', now(), now(), 'bench'
		FROM generate_series(1, %d) g`, n))
	if err == nil {
		// Statistics as autovacuum would have them for a table that was not filled a
		// moment ago: without them the planner's choice for the job's pages varies.
		_, err = pool.Exec(context.Background(), `ANALYZE dead_letters`)
	}
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("seeded %d records in %s", n, time.Since(start).Round(time.Millisecond))
}

// processCPU is this process's CPU time so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// sessionsCPU returns the CPU time so far of each PostgreSQL backend whose sessions are
// named app, by pid, read from /proc/<pid>/stat: known is false when a backend's is not
// readable (a server on another host).
func sessionsCPU(b *testing.B, pool *pgxpool.Pool, app string) (cpu map[int32]time.Duration, known bool) {
	rows, err := pool.Query(context.Background(), `SELECT pid FROM pg_stat_activity WHERE application_name = $1`, app)
	if err != nil {
		b.Fatal(err)
	}
	pids, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		b.Fatal(err)
	}
	cpu = make(map[int32]time.Duration, len(pids))
	for _, pid := range pids {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return nil, false
		}
		// The fields after the command name, which is in parentheses and may hold spaces:
		// utime and stime are the 12th and 13th, in clock ticks (USER_HZ, 100 on Linux).
		f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		if len(f) < 13 {
			return nil, false
		}
		user, err1 := strconv.ParseInt(f[11], 10, 64)
		sys, err2 := strconv.ParseInt(f[12], 10, 64)
		if err1 != nil || err2 != nil {
			return nil, false
		}
		cpu[pid] = time.Duration(user+sys) * 10 * time.Millisecond
	}
	return cpu, true
}

// cpuSince is the CPU the backends of after spent since before (all of it for a backend
// that started since).
func cpuSince(before, after map[int32]time.Duration) time.Duration {
	var d time.Duration
	for pid, t := range after {
		d += t - before[pid]
	}
	return d
}
