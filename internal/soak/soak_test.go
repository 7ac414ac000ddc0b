package soak_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/auth"
	"github.com/dlqops/dlq/internal/routes"
	"github.com/dlqops/dlq/internal/testenv"
	"github.com/dlqops/dlq/internal/testenv/kafkatest"
	"github.com/dlqops/dlq/internal/testenv/proctest"
)

// scenario is one row of the table.
type scenario struct {
	name string
	run  func(t *testing.T, s *soak, r *row)
}

var scenarios = []scenario{
	{"kill -9 x30 (static membership)", killNine("")},
	{"kill -9 x30 (group_instance_id: off)", killNine("off")},
	{"zombie worker (SIGSTOP > session)", zombie},
	{"PostgreSQL killed, then read-only, mid-park", postgresMidPark},
	{"committed offsets moved to latest", offsets(moveToLatest)},
	{"consumer group deleted", offsets(deleteGroup)},
	{"DLQ records deleted unread (retention)", offsets(retention)},
	{"broker restart during a bulk replay", brokerRestartDuringReplay},
	{"downstream outage: flood held by the breaker", downstreamFlood},
}

// TestSoak runs every scenario in both delivery modes on one private broker and
// PostgreSQL server, prints the table, and fails when a verdict does.
func TestSoak(t *testing.T) {
	if os.Getenv("DLQ_SOAK") != "1" {
		t.Skip("the soak runs with `make soak` (DLQ_SOAK=1)")
	}
	logs, err := os.MkdirTemp("", "dlq-soak-logs-")
	require.NoError(t, err)
	s := &soak{bin: buildBinaries(t), tmp: t.TempDir(), logs: logs, broker: kafkatest.StartBroker(t), pg: testenv.StartPGServer(t)}
	var rows []row
	began := time.Now()
	for _, delivery := range []string{routes.DeliveryAtLeastOnce, routes.DeliveryExactlyOnce} {
		s.delivery = delivery
		for _, sc := range scenarios {
			r := row{scenario: sc.name, delivery: delivery}
			start, ran := time.Now(), false
			passed := t.Run(delivery+"/"+sc.name, func(t *testing.T) { ran = true; sc.run(t, s, &r) })
			if !ran { // left out by -run
				continue
			}
			if !passed && r.verdict == "" {
				r.verdict = "FAIL: the scenario did not finish (see its log)"
			}
			r.note = strings.TrimPrefix(r.note+fmt.Sprintf("; %s", time.Since(start).Round(time.Second)), "; ")
			rows = append(rows, r)
		}
	}
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SCENARIO\tDELIVERY\tRECORDS\tMISSING\tDUPLICATED\tVERDICT\tAUDIT\tNOTE")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%s\t%s\t%s\n", r.scenario, r.delivery, r.records, r.missing, r.duplicated, r.verdict, r.audit, r.note)
	}
	tw.Flush()
	fmt.Printf("\nsoak: %d scenarios in %s (logs in %s)\n%s", len(rows), time.Since(began).Round(time.Second), logs, b.String())
	for _, r := range rows {
		if !r.ok {
			t.Errorf("%s: %s", r.scenario, r.verdict)
		}
	}
}

// route is a fresh DLQ, target and route name for one scenario.
type route struct {
	name, group, dlq, target, db string
	partitions                   int
	delivery                     string // the soak's current mode
}

func (s *soak) route(t *testing.T, prefix string, partitions int) route {
	t.Helper()
	name := testenv.UniqueName(prefix)
	return route{name: name, group: "dlq-worker." + name, partitions: partitions, db: s.schema(t), delivery: s.delivery,
		dlq: kafkatest.CreateTopic(t, s.bootstrap(), partitions, nil), target: kafkatest.CreateTopic(t, s.bootstrap(), partitions, nil)}
}

func (rt route) opts() proctest.WorkerConfig {
	return proctest.WorkerConfig{Route: rt.name, Topic: rt.dlq, DatabaseURL: rt.db, MaxInFlight: 1000, Delivery: rt.delivery}
}

// killNine kills the worker with SIGKILL 30 times at random points of a 100,000-record
// backlog, then lets a last one finish: nothing may be lost; the duplicates per kill are
// what a crash costs (static membership on or off).
func killNine(groupInstance string) func(t *testing.T, s *soak, r *row) {
	return func(t *testing.T, s *soak, r *row) {
		const records, partitions, kills = 100000, 3, 30
		rt := s.route(t, "kill-", partitions)
		s.seed(t, rt.dlq, rt.target, "k", records, partitions, false)
		o := rt.opts()
		o.GroupInstance = groupInstance
		cfg := s.workerConfig(t, o)
		logPath := filepath.Join(s.logDir(t), "worker.log")
		targetEnd, committed := s.watermarks(t, rt.target), s.committed(t, rt.dlq, rt.group, partitions)
		rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 18))
		began := time.Now()
		for i := range kills {
			left := (records - kafkatest.Total(committed())) * 8 / 10 // 9 in 10 go to the target
			require.Positive(t, left, "the backlog drained before kill %d", i+1)
			at := kafkatest.Total(targetEnd()) + 1 + rng.Int64N(min(3000, left))
			w := s.startWorker(t, cfg, logPath)
			require.Eventually(t, func() bool { return kafkatest.Total(targetEnd()) >= at }, 3*time.Minute, 10*time.Millisecond,
				"kill %d: the worker never redrove up to %d; log in %s", i+1, at, logPath)
			w.Kill()
		}
		killed, committedByLives := time.Since(began), kafkatest.Total(committed())
		w := s.startWorker(t, cfg, logPath)
		s.waitDrained(t, rt.dlq, rt.group, partitions, 5*time.Minute)
		require.NoError(t, w.Term(procGrace), "graceful shutdown; log in %s", logPath)
		s.judge(t, r, cfg, rt.dlq, rt.group, rt.target, rt.db, keys("k", records), 0)
		r.note = fmt.Sprintf("%.0f duplicated per kill; 30 kills in %s; the killed lives committed %d records in all",
			float64(r.duplicated)/kills, killed.Round(time.Second), committedByLives)
	}
}

// zombie: two workers share a route; one is stopped (SIGSTOP) for twice the session, so
// the group gives its partitions to the other, then it runs again (SIGCONT) and finds its
// assignment lost: nothing may be lost.
func zombie(t *testing.T, s *soak, r *row) {
	const records, partitions = 20000, 4
	rt := s.route(t, "zombie-", partitions)
	s.seed(t, rt.dlq, rt.target, "z", records, partitions, false)
	o := rt.opts()
	o.RateLimit = 400 // records per second per worker: the run lasts long enough to stop one
	cfg := s.workerConfig(t, o)
	dir := s.logDir(t)
	a := s.superviseWorker(t, cfg, filepath.Join(dir, "a.log"))
	b := s.superviseWorker(t, cfg, filepath.Join(dir, "b.log"))
	targetEnd := s.watermarks(t, rt.target)
	require.Eventually(t, func() bool { return kafkatest.Total(targetEnd()) >= records/5 }, 3*time.Minute, 20*time.Millisecond)
	a.signal(syscall.SIGSTOP)
	time.Sleep(2 * session) // the fault's duration, not a synchronization
	a.signal(syscall.SIGCONT)
	s.waitDrained(t, rt.dlq, rt.group, partitions, 5*time.Minute)
	require.NoError(t, a.term(), "the zombie shuts down cleanly; logs in %s", dir)
	require.NoError(t, b.term(), "logs in %s", dir)
	s.judge(t, r, cfg, rt.dlq, rt.group, rt.target, rt.db, keys("z", records), 0)
	r.note = "stopped " + (2 * session).String() + a.note() + b.note()
}

// rowCount counts the DLQ's rows in PostgreSQL with a connection of its own (-1 while the
// server does not answer).
func rowCount(dbURL, dlq string) int {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return -1
	}
	defer conn.Close(context.Background())
	var n int
	if conn.QueryRow(ctx, `SELECT count(*) FROM dead_letters WHERE dlq_topic = $1`, dlq).Scan(&n) != nil {
		return -1
	}
	return n
}

// postgresMidPark: every record is to be parked; PostgreSQL is killed (immediate
// shutdown, crash recovery at restart) at a fifth, and made read-only for 10 s (a failover
// to a standby and back) at a half.
func postgresMidPark(t *testing.T, s *soak, r *row) {
	const records, partitions = 20000, 2
	rt := s.route(t, "pg-", partitions)
	s.seed(t, rt.dlq, rt.target, "p", records, partitions, true)
	o := rt.opts()
	o.RateLimit = 1000
	cfg := s.workerConfig(t, o)
	logPath := filepath.Join(s.logDir(t), "worker.log")
	w := s.superviseWorker(t, cfg, logPath)

	require.Eventually(t, func() bool { return rowCount(rt.db, rt.dlq) >= records/5 }, 3*time.Minute, 50*time.Millisecond)
	s.pg.Kill()
	time.Sleep(10 * time.Second) // the outage
	s.pg.Start()

	require.Eventually(t, func() bool { return rowCount(rt.db, rt.dlq) >= records/2 }, 3*time.Minute, 50*time.Millisecond,
		"parking did not resume after the restart; log in %s", logPath)
	// One session for the whole failover: it stays writable (sessions opened after the
	// ALTER are read-only) and it is not terminated with the worker's.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, s.pg.URL())
	require.NoError(t, err)
	defer conn.Close(context.Background())
	sql := func(q string) {
		_, err := conn.Exec(ctx, q)
		require.NoError(t, err, q)
	}
	defer func() {
		_, _ = conn.Exec(context.Background(), "ALTER DATABASE postgres RESET default_transaction_read_only")
	}()
	sql("ALTER DATABASE postgres SET default_transaction_read_only = on")
	sql("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = 'postgres' AND pid <> pg_backend_pid()")
	time.Sleep(10 * time.Second) // read-only
	sql("ALTER DATABASE postgres RESET default_transaction_read_only")

	s.waitDrained(t, rt.dlq, rt.group, partitions, 5*time.Minute)
	require.Eventually(t, func() bool { return rowCount(rt.db, rt.dlq) >= records }, time.Minute, 200*time.Millisecond)
	require.NoError(t, w.term(), "log in %s", logPath)
	s.judge(t, r, cfg, rt.dlq, rt.group, rt.target, rt.db, keys("p", records), 0)
	r.note = "killed 10 s, read-only 10 s" + w.note()
}

// offsetFault is what happens to a stopped route's group or DLQ before a worker starts
// again; it returns how many records it makes unreadable.
type offsetFault func(t *testing.T, s *soak, rt route) int

// offsets: a worker redrives a first batch and stops; a second batch arrives; the fault
// hits; a worker starts again and redrives what it can.
func offsets(fault offsetFault) func(t *testing.T, s *soak, r *row) {
	return func(t *testing.T, s *soak, r *row) {
		const first, second, partitions = 3000, 1000, 2
		rt := s.route(t, "offsets-", partitions)
		s.seed(t, rt.dlq, rt.target, "a", first, partitions, false)
		cfg := s.workerConfig(t, rt.opts())
		logPath := filepath.Join(s.logDir(t), "worker.log")
		w := s.startWorker(t, cfg, logPath)
		s.waitDrained(t, rt.dlq, rt.group, partitions, 3*time.Minute)
		require.NoError(t, w.Term(procGrace), "log in %s", logPath)

		s.seed(t, rt.dlq, rt.target, "b", second, partitions, false)
		lost := fault(t, s, rt)
		w = s.startWorker(t, cfg, logPath)
		seeded := append(keys("a", first), keys("b", second)...)
		// Until what can be redriven is (polled by the independent count; a worker that
		// redrives nothing leaves it short, and the verdict says so).
		deadline := time.Now().Add(2 * time.Minute)
		for time.Now().Before(deadline) {
			if missing, _ := s.count(t, rt.target, rt.db, rt.dlq).tally(seeded); missing <= lost {
				break
			}
			time.Sleep(time.Second)
		}
		time.Sleep(3 * time.Second) // a last run commits what it redrove
		require.NoError(t, w.Term(procGrace), "log in %s", logPath)
		s.judge(t, r, cfg, rt.dlq, rt.group, rt.target, rt.db, seeded, lost)
	}
}

// groupAdmin retries op until the stopped static member has left the group (its session
// ends; a static member does not leave on shutdown).
func groupAdmin(t *testing.T, op func(ctx context.Context) error) {
	t.Helper()
	var last error
	require.Eventually(t, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		last = op(ctx)
		return last == nil
	}, 2*time.Minute, 500*time.Millisecond, "group admin: %v", last)
}

// moveToLatest commits the DLQ's end for the group behind the worker's back (a reset to
// latest): the second batch would be skipped unread.
func moveToLatest(t *testing.T, s *soak, rt route) int {
	a := kafkatest.Admin(t, s.bootstrap())
	var tps []kafka.TopicPartition
	for p, off := range s.watermarks(t, rt.dlq)() {
		tps = append(tps, kafka.TopicPartition{Topic: &rt.dlq, Partition: p, Offset: kafka.Offset(off)})
	}
	groupAdmin(t, func(ctx context.Context) error {
		res, err := a.AlterConsumerGroupOffsets(ctx, []kafka.ConsumerGroupTopicPartitions{{Group: rt.group, Partitions: tps}})
		if err != nil {
			return err
		}
		for _, tp := range res.ConsumerGroupsTopicPartitions[0].Partitions {
			if tp.Error != nil {
				return tp.Error
			}
		}
		return nil
	})
	return 0
}

// deleteGroup deletes the route's consumer group: its committed offsets are gone.
func deleteGroup(t *testing.T, s *soak, rt route) int {
	a := kafkatest.Admin(t, s.bootstrap())
	groupAdmin(t, func(ctx context.Context) error {
		res, err := a.DeleteConsumerGroups(ctx, []string{rt.group})
		if err != nil {
			return err
		}
		if e := res.ConsumerGroupResults[0].Error; e.Code() != kafka.ErrNoError {
			return e
		}
		return nil
	})
	return 0
}

// retention deletes the first 150 records of the second batch of each partition before
// the worker reads them, as retention would: a loss the audit must report with its range.
func retention(t *testing.T, s *soak, rt route) int {
	const perPartition = 150
	committed := s.committed(t, rt.dlq, rt.group, rt.partitions)()
	below := kafkatest.Offsets{}
	for p := range rt.partitions {
		below[int32(p)] = committed[int32(p)] + perPartition
	}
	kafkatest.DeleteRecords(t, s.bootstrap(), rt.dlq, below)
	return perPartition * rt.partitions
}

// job is the part of the API's job the soak reads.
type job struct {
	ID     int64  `json:"id"`
	Status string `json:"status"`
	Total  int64  `json:"total"`
	Done   int64  `json:"done"`
	Failed int64  `json:"failed"`
	Error  string `json:"error"`
}

// brokerRestartDuringReplay: a worker parks 10,000 exhausted records; an admin replays
// them all with a bulk job through dlq-admin's API (its CLI), and the broker restarts in
// the middle of the job. Every record ends replayed or parked again.
func brokerRestartDuringReplay(t *testing.T, s *soak, r *row) {
	const records, partitions = 10000, 2
	rt := s.route(t, "replay-", partitions)
	s.seed(t, rt.dlq, rt.target, "r", records, partitions, true)
	cfg := s.workerConfig(t, rt.opts())
	dir := s.logDir(t)
	w := s.superviseWorker(t, cfg, filepath.Join(dir, "worker.log"))
	s.waitDrained(t, rt.dlq, rt.group, partitions, 3*time.Minute)
	require.Eventually(t, func() bool { return rowCount(rt.db, rt.dlq) == records }, time.Minute, 200*time.Millisecond)

	token := auth.NewToken()
	adminCfg := filepath.Join(dir, "admin.yaml")
	require.NoError(t, os.WriteFile(adminCfg, []byte(fmt.Sprintf(`log: {level: info, format: json}
http: {listen: %q}
database: {url: %q}
shutdown_grace: 5s
tokens:
  - {name: soak, role: admin, sha256: %s}
`, "127.0.0.1:0", rt.db, auth.Hash(token))), 0o600))
	admin := s.start(t, filepath.Join(dir, "admin.log"), "dlq-admin", "serve", "--config", adminCfg)
	url := "http://" + proctest.ServingAddr(t, filepath.Join(dir, "admin.log"), time.Minute)
	require.Eventually(t, func() bool {
		res, err := http.Get(url + "/readyz")
		if err != nil {
			return false
		}
		res.Body.Close()
		return res.StatusCode == http.StatusOK
	}, time.Minute, 200*time.Millisecond, "dlq-admin not ready; log in %s", dir)
	cli := func(args ...string) []byte {
		t.Helper()
		cmd := exec.Command(filepath.Join(s.bin, "dlq-admin"), append(args, "--url", url, "-o", "json")...)
		cmd.Env = append(os.Environ(), "DLQ_ADMIN_TOKEN="+token)
		out, err := cmd.Output()
		require.NoError(t, err, "dlq-admin %v: %s", args, out)
		return out
	}
	var j job
	require.NoError(t, json.Unmarshal(cli("bulk", "replay", "--route", rt.name, "--yes", "--detach", "--rate", "500"), &j))
	show := func() job {
		var j2 job
		require.NoError(t, json.Unmarshal(cli("jobs", "show", fmt.Sprint(j.ID)), &j2))
		return j2
	}
	require.Eventually(t, func() bool { return show().Done >= records/5 }, 3*time.Minute, 200*time.Millisecond)
	s.broker.Stop()
	time.Sleep(15 * time.Second) // the outage
	s.broker.Start()
	require.Eventually(t, func() bool {
		j = show()
		return j.Status != "pending" && j.Status != "running"
	}, 5*time.Minute, time.Second, "the job did not end (%+v); logs in %s", j, dir)
	require.NoError(t, admin.Term(procGrace), "logs in %s", dir)
	// After the broker's return the worker may find its static membership fenced by its
	// own rejoin (confluent-kafka-go#494): a fatal error, on which it exits 1 by itself,
	// possibly just as it is told to stop. That exit is its answer to the fence, not an
	// unclean shutdown: it is noted, and the audit and the count decide.
	fenced := ""
	if err := w.term(); err != nil {
		logs, rerr := os.ReadFile(filepath.Join(dir, "worker.log"))
		require.NoError(t, rerr)
		require.Contains(t, string(logs), "Static consumer fenced", "the worker did not stop cleanly (%v); logs in %s", err, dir)
		fenced = "; fenced after the broker's return, the worker exited 1 by itself as it was stopped"
	}
	s.judge(t, r, cfg, rt.dlq, rt.group, rt.target, rt.db, keys("r", records), 0)
	r.note = fmt.Sprintf("job %s: %d done, %d failed of %d; broker down 15 s", j.Status, j.Done, j.Failed, j.Total) + w.note() + fenced
}
