// Command demo runs the whole loop on the local stack and ends with a conservation report:
//
//  1. orders-service consumes fresh `orders` topic; its downstream is down for the first
//     minute and 1% of orders are poison (rejected until the bug is "fixed");
//  2. 10,000 orders are produced; every failure goes to the DLQ through the deadletter
//     package;
//  3. dlq-worker re-drives them with backoff: most succeed once the downstream is back, the
//     poison ones are parked as exhausted after max_retries;
//  4. the bug is fixed and the parked ones are replayed through dlq-admin's bulk API;
//  5. produced = processed, nothing lost; dlq-worker's audit agrees.
//
// It expects the stack of `make up` (KAFKA_BOOTSTRAP_SERVERS, DATABASE_URL) and the binaries
// of `make build` plus bin/orders-service; `make demo` arranges both.
package main

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/dlqops/dlq/internal/adminclient"
	"github.com/dlqops/dlq/internal/api"
	"github.com/dlqops/dlq/internal/store"
)

type options struct {
	orders      int
	poisonEvery int
	downFor     time.Duration
	timeout     time.Duration
	dir         string
	bin         string // folder holding dlq-worker, dlq-admin and orders-service
	schedule    string // the route's cron
	backoff     string // the route's backoff, as YAML
	// deleteTopics deletes the run's two topics at the end (the test does: `make test`
	// leaves nothing in the broker `make dev` uses); `make demo` keeps them to look at.
	deleteTopics bool
	runID        string // names the run's topics and route; default: the time in base 36
	// Where the demo's own dlq-worker, dlq-admin and orders-service listen: beside `make
	// dev`'s binaries, so both can run at once.
	workerAddr, adminAddr, serviceAddr string
}

func main() {
	var o options
	flag.IntVar(&o.orders, "orders", 10000, "orders to produce")
	flag.IntVar(&o.poisonEvery, "poison-every", 100, "every Nth order is poison until the fix")
	flag.DurationVar(&o.downFor, "down-for", time.Minute, "how long the downstream is down at the start")
	flag.DurationVar(&o.timeout, "timeout", 8*time.Minute, "give up after this long")
	flag.StringVar(&o.dir, "dir", ".cache/demo", "working folder for configs and logs")
	flag.StringVar(&o.bin, "bin", "bin", "folder holding the binaries")
	flag.StringVar(&o.schedule, "schedule", "*/5 * * * * *", "the route's cron schedule")
	flag.StringVar(&o.backoff, "backoff", "{base: 5s, factor: 2, cap: 40s, jitter: 0}", "the route's backoff (YAML)")
	flag.StringVar(&o.workerAddr, "worker-listen", envOr("DLQ_DEMO_WORKER_LISTEN", "127.0.0.1:9474"), "the demo's dlq-worker's host:port")
	flag.StringVar(&o.adminAddr, "admin-listen", envOr("DLQ_DEMO_ADMIN_LISTEN", "127.0.0.1:8081"), "the demo's dlq-admin's host:port")
	flag.StringVar(&o.serviceAddr, "service-listen", envOr("DLQ_DEMO_SERVICE_LISTEN", "127.0.0.1:8091"), "the demo's orders-service's host:port")
	flag.Parse()
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "demo FAILED:", err)
		os.Exit(1)
	}
}

func say(format string, args ...any) {
	fmt.Printf("%s  "+format+"\n", append([]any{time.Now().Format(time.TimeOnly)}, args...)...)
}

// envOr is the environment's value of key, or def when it is unset or empty.
func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

func run(o options) error {
	bootstrap := os.Getenv("KAFKA_BOOTSTRAP_SERVERS")
	if bootstrap == "" || os.Getenv("DATABASE_URL") == "" {
		return errors.New("KAFKA_BOOTSTRAP_SERVERS and DATABASE_URL must be set (run `make demo`)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	defer cancel()
	runID := o.runID
	if runID == "" {
		runID = strconv.FormatInt(time.Now().Unix(), 36)
	}
	topic, dlq, route := "demo-orders-"+runID, "demo-orders-"+runID+".dlq", "demo-"+runID
	if err := os.MkdirAll(o.dir, 0o755); err != nil {
		return err
	}
	say("run %s: topics %s and %s (3 partitions each)", runID, topic, dlq)
	if err := createTopics(ctx, bootstrap, topic, dlq); err != nil {
		return err
	}
	if o.deleteTopics {
		// Registered first, so it runs last: after the processes using the topics stopped.
		defer func() {
			if err := deleteTopics(bootstrap, topic, dlq); err != nil {
				say("cannot delete the topics %s and %s: %v", topic, dlq, err)
			}
		}()
	}

	token := randomToken()
	if err := writeConfigs(o, route, dlq, topic, token); err != nil {
		return err
	}
	var procs []*exec.Cmd
	defer func() {
		for _, p := range procs {
			_ = p.Process.Signal(syscall.SIGTERM)
			_ = p.Wait()
		}
	}()
	start := func(name string, args ...string) error {
		p, err := startProcess(o, name, args...)
		if err == nil {
			procs = append(procs, p)
		}
		return err
	}
	if err := start("dlq-worker", "run", "--config", filepath.Join(o.dir, "worker.yaml")); err != nil {
		return err
	}
	if err := start("dlq-admin", "serve", "--config", filepath.Join(o.dir, "admin.yaml")); err != nil {
		return err
	}
	if err := start("orders-service", "--bootstrap", bootstrap, "--topic", topic, "--dlq", dlq,
		"--group", "orders-service-"+runID, "--listen", o.serviceAddr,
		"--down-for", o.downFor.String(), "--poison-every", strconv.Itoa(o.poisonEvery)); err != nil {
		return err
	}
	for _, addr := range []string{o.workerAddr, o.adminAddr} {
		if err := waitReady(ctx, "http://"+addr+"/readyz"); err != nil {
			return err
		}
	}
	say("dlq-worker, dlq-admin and orders-service are up (logs in %s); the downstream is DOWN for %s", o.dir, o.downFor)

	if err := produceOrders(ctx, bootstrap, topic, o.orders); err != nil {
		return err
	}
	poison := 0
	if o.poisonEvery > 0 {
		poison = (o.orders + o.poisonEvery - 1) / o.poisonEvery
	}
	say("produced %d orders (%d of them poison)", o.orders, poison)

	admin := adminclient.New("http://"+o.adminAddr, token, nil)
	// Phase 1: the worker re-drives; all but the poison orders end up processed and the
	// poison ones parked as exhausted.
	err := poll(ctx, func() (bool, error) {
		st, err := serviceStats(o.serviceAddr, o.orders)
		if err != nil {
			return false, err
		}
		counts, err := dlqCounts(ctx, admin, dlq)
		if err != nil {
			return false, err
		}
		say("processed %5d/%d  failures %v  DLQ rows: %v", st.ProcessedUnique, o.orders, st.Failures, counts)
		return st.ProcessedUnique == o.orders-poison && counts["parked/exhausted"] == int64(poison), nil
	})
	if err != nil {
		return fmt.Errorf("waiting for the redrive to settle: %w", err)
	}
	say("every non-poison order is processed; the %d poison orders are parked as exhausted", poison)

	// Phase 2: the bug is fixed; an operator replays what was parked.
	if _, err := http.Post("http://"+o.serviceAddr+"/fix", "", nil); err != nil {
		return err
	}
	req := api.BulkRequest{Filter: &api.Filter{DLQTopic: dlq, Statuses: []store.Status{store.StatusParked}}}
	count, err := admin.BulkCount(ctx, store.JobReplay, req)
	if err != nil {
		return err
	}
	say("the bug is fixed; dry run: %d parked records would be replayed", count)
	req.ConfirmCount = &count
	job, err := admin.Bulk(ctx, store.JobReplay, req, "demo-"+runID)
	if err != nil {
		return err
	}
	say("bulk replay job %d created", job.ID)
	err = poll(ctx, func() (bool, error) {
		if job, err = admin.GetJob(ctx, job.ID); err != nil {
			return false, err
		}
		st, err := serviceStats(o.serviceAddr, o.orders)
		if err != nil {
			return false, err
		}
		say("job %d %s: %d/%d replayed, %d failed; processed %d/%d", job.ID, job.Status, job.Done, job.Total, job.Failed, st.ProcessedUnique, o.orders)
		if adminclient.Finished(job) && job.Status != store.JobSucceeded {
			return false, fmt.Errorf("job %d ended %s: %s", job.ID, job.Status, job.Error)
		}
		return job.Status == store.JobSucceeded && st.ProcessedUnique == o.orders, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for the replay: %w", err)
	}
	return report(ctx, o, dlq, route, admin)
}

// report prints the conservation report and fails when anything is missing.
func report(ctx context.Context, o options, dlq, route string, admin *adminclient.Client) error {
	st, err := serviceStats(o.serviceAddr, o.orders)
	if err != nil {
		return err
	}
	counts, err := dlqCounts(ctx, admin, dlq)
	if err != nil {
		return err
	}
	audit := exec.CommandContext(ctx, filepath.Join(o.bin, "dlq-worker"), "audit", "--config", filepath.Join(o.dir, "worker.yaml"), "--topic", dlq, "--group", "dlq-worker."+route)
	auditOut, auditErr := audit.CombinedOutput()
	fmt.Printf(`
Conservation report
  produced                 %d
  processed (unique)       %d
  processed more than once %d   (at-least-once: a redrive or replay may repeat a record)
  missing                  %d %v
  DLQ rows in PostgreSQL   %v
  dlq-worker audit of %s:
%s
`, o.orders, st.ProcessedUnique, st.ProcessedTotal-st.ProcessedUnique, len(st.Missing), st.Missing, counts, dlq, indent(string(auditOut)))
	if len(st.Missing) > 0 || st.ProcessedUnique != o.orders {
		return fmt.Errorf("%d orders were not processed", len(st.Missing))
	}
	if auditErr != nil {
		return fmt.Errorf("the audit found missing records: %w", auditErr)
	}
	fmt.Println("Nothing lost: every order was processed.")
	return nil
}

func indent(s string) string {
	return "    " + strings.ReplaceAll(strings.TrimSpace(s), "\n", "\n    ")
}

func createTopics(ctx context.Context, bootstrap string, names ...string) error {
	specs := make([]kafka.TopicSpecification, len(names))
	for i, n := range names {
		specs[i] = kafka.TopicSpecification{Topic: n, NumPartitions: 3, ReplicationFactor: 1}
	}
	return adminTopics(bootstrap, "create", func(a *kafka.AdminClient) ([]kafka.TopicResult, error) {
		return a.CreateTopics(ctx, specs)
	})
}

func deleteTopics(bootstrap string, names ...string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return adminTopics(bootstrap, "delete", func(a *kafka.AdminClient) ([]kafka.TopicResult, error) {
		return a.DeleteTopics(ctx, names)
	})
}

// adminTopics runs one admin call on topics and returns its first error, per topic too.
func adminTopics(bootstrap, what string, call func(*kafka.AdminClient) ([]kafka.TopicResult, error)) error {
	a, err := kafka.NewAdminClient(&kafka.ConfigMap{"bootstrap.servers": bootstrap})
	if err != nil {
		return err
	}
	defer a.Close()
	res, err := call(a)
	if err != nil {
		return err
	}
	for _, r := range res {
		if r.Error.Code() != kafka.ErrNoError {
			return fmt.Errorf("%s topic %s: %w", what, r.Topic, r.Error)
		}
	}
	return nil
}

func produceOrders(ctx context.Context, bootstrap, topic string, n int) error {
	p, err := kafka.NewProducer(&kafka.ConfigMap{"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": true})
	if err != nil {
		return err
	}
	defer p.Close()
	delivered := make(chan kafka.Event, n)
	for i := range n {
		m := &kafka.Message{
			TopicPartition: kafka.TopicPartition{Topic: &topic, Partition: kafka.PartitionAny},
			Key:            []byte(strconv.Itoa(i)),
			Value:          fmt.Appendf(nil, `{"order":%d,"total_cents":%d}`, i, 100+i%5000),
		}
		for {
			err := p.Produce(m, delivered)
			if err == nil {
				break
			}
			if kerr, ok := err.(kafka.Error); !ok || kerr.Code() != kafka.ErrQueueFull {
				return err
			}
			p.Flush(100)
		}
	}
	for range n {
		select {
		case ev := <-delivered:
			if m := ev.(*kafka.Message); m.TopicPartition.Error != nil {
				return m.TopicPartition.Error
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

type stats struct {
	ProcessedUnique int            `json:"processed_unique"`
	ProcessedTotal  int            `json:"processed_total"`
	Failures        map[string]int `json:"failures"`
	Missing         []int          `json:"missing"`
}

func serviceStats(addr string, expect int) (stats, error) {
	var s stats
	resp, err := http.Get(fmt.Sprintf("http://%s/stats?expect=%d", addr, expect))
	if err != nil {
		return s, err
	}
	defer resp.Body.Close()
	return s, json.NewDecoder(resp.Body).Decode(&s)
}

// dlqCounts returns the DLQ topic's rows by "status/reason".
func dlqCounts(ctx context.Context, admin *adminclient.Client, dlq string) (map[string]int64, error) {
	s, err := admin.Stats(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string]int64{}
	for _, r := range s.Counts {
		if r.DLQTopic == dlq {
			out[string(r.Status)+"/"+string(r.Reason)] += r.Count
		}
	}
	return out, nil
}

func poll(ctx context.Context, done func() (bool, error)) error {
	t := time.NewTicker(5 * time.Second)
	defer t.Stop()
	for {
		ok, err := done()
		if err != nil || ok {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

func waitReady(ctx context.Context, url string) error {
	for {
		resp, err := http.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s never became ready", url)
		case <-time.After(500 * time.Millisecond):
		}
	}
}

func startProcess(o options, name string, args ...string) (*exec.Cmd, error) {
	log, err := os.Create(filepath.Join(o.dir, name+".log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(filepath.Join(o.bin, name), args...)
	cmd.Env = demoEnv(os.Environ())
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s (run `make build` first): %w", name, err)
	}
	return cmd, nil
}

// demoEnv is the environment of the demo's binaries: the caller's, less the overrides that
// move `make dev`'s binaries, so that they listen where the demo's configuration says.
func demoEnv(env []string) []string {
	return slices.DeleteFunc(slices.Clone(env), func(kv string) bool {
		return strings.HasPrefix(kv, "DLQ_WORKER_HTTP_LISTEN=") || strings.HasPrefix(kv, "DLQ_ADMIN_HTTP_LISTEN=")
	})
}

func randomToken() string {
	b := make([]byte, 24)
	_, _ = rand.Read(b) // never fails on Linux
	return hex.EncodeToString(b)
}

func writeConfigs(o options, route, dlq, topic, token string) error {
	sum := sha256.Sum256([]byte(token))
	worker := fmt.Sprintf(`log: {level: info, format: json}
http: {listen: %q}
database: {migrate_on_start: true}
shutdown_grace: 10s
routes:
  - name: %s
    topics: [%s]
    schedule: %q
    max_retries: 5
    backoff: %s
    allowed_targets: [%s]
`, o.workerAddr, route, dlq, o.schedule, o.backoff, topic)
	admin := fmt.Sprintf(`log: {level: info, format: json}
http: {listen: %q}
database: {migrate_on_start: true}
tokens:
  - {name: demo-operator, sha256: %s, role: admin}
`, o.adminAddr, hex.EncodeToString(sum[:]))
	return errors.Join(
		os.WriteFile(filepath.Join(o.dir, "worker.yaml"), []byte(worker), 0o600),
		os.WriteFile(filepath.Join(o.dir, "admin.yaml"), []byte(admin), 0o600))
}
