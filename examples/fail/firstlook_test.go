package main

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/store"
	"github.com/dlqops/dlq/internal/testenv"
	"github.com/dlqops/dlq/internal/testenv/kafkatest"
	"github.com/dlqops/dlq/internal/testenv/proctest"
)

// The newcomer's first look, as `make dev`, `make fail` and the next steps they print run
// it: the binaries with the example configurations (only the topics, the group, the
// listeners and the database made the test's own), then make fail's records. The worker
// parks the exhausted and unroutable ones at once and redrives the first failures after
// their backoff; the CLI commands docs/getting-started.md gives show them and replay the unroutable
// ones to the orders topic.
func TestFirstLookRedrivesParksAndReplays(t *testing.T) {
	bootstrap := testenv.KafkaBootstrap(t)
	dbURL := testenv.Schema(t)
	orders := kafkatest.CreateTopic(t, bootstrap, 3, nil)
	dlq := kafkatest.CreateTopic(t, bootstrap, 3, nil)
	dir := t.TempDir()
	require.NoError(t, proctest.Build(dir, "github.com/dlqops/dlq/cmd/dlq-worker", "github.com/dlqops/dlq/cmd/dlq-admin"))

	example := func(name string, repl ...string) string {
		raw, err := os.ReadFile(filepath.Join("..", "..", "config", name))
		require.NoError(t, err)
		text := string(raw)
		for i := 0; i < len(repl); i += 2 {
			require.Contains(t, text, repl[i], "config/%s changed: the test adapts it", name)
			text = strings.Replace(text, repl[i], repl[i+1], 1)
		}
		path := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(path, []byte(text), 0o600))
		return path
	}
	workerCfg := example("worker.example.yaml", "topics: [orders.dlq]", "topics: ["+dlq+"]",
		"# group: dlq-worker.orders", "group: "+testenv.UniqueName("first-look-"))
	adminCfg := example("admin.example.yaml", "replay_topics: [orders]", "replay_topics: ["+orders+"]")
	// Each binary binds a port the kernel picks and logs it.
	env := []string{"DATABASE_URL=" + dbURL, "KAFKA_BOOTSTRAP_SERVERS=" + bootstrap, "DLQ_WORKER_LOG_FORMAT=json",
		"DLQ_WORKER_HTTP_LISTEN=127.0.0.1:0", "DLQ_ADMIN_HTTP_LISTEN=127.0.0.1:0", "DLQ_ADMIN_ALLOW_DEV_TOKENS=true",
		"DLQ_ADMIN_LOG_FORMAT=json"}
	workerLog, adminLog := filepath.Join(dir, "dlq-worker.log"), filepath.Join(dir, "dlq-admin.log")
	proctest.StartService(t, workerLog, env, 45*time.Second, filepath.Join(dir, "dlq-worker"), "run", "--config", workerCfg)
	proctest.StartService(t, adminLog, env, 45*time.Second, filepath.Join(dir, "dlq-admin"), "serve", "--config", adminCfg)
	workerAddr, adminAddr := proctest.ServingAddr(t, workerLog, 2*time.Minute), proctest.ServingAddr(t, adminLog, 2*time.Minute)
	waitReady(t, workerAddr)
	waitReady(t, adminAddr)

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.NoError(t, run(ctx, bootstrap, orders, dlq, kinds{retrying: 5, exhausted: 3, unroutable: 2}))

	st, err := store.Open(context.Background(), dbURL)
	require.NoError(t, err)
	defer st.Close()
	count := func(status store.Status, reason store.Reason) int64 {
		f := store.Filter{Statuses: []store.Status{status}}
		if reason != "" {
			f.Reasons = []store.Reason{reason}
		}
		n, err := st.Count(context.Background(), f)
		require.NoError(t, err)
		return n
	}
	// Backoff 30 s ± 20 % from the failure, on a 30 s schedule: redriven within ~70 s,
	// from a scheduled row, or straight from the DLQ when the first run finds it due
	// already (the failures were written up to 30 s before that run).
	onOrders := kafkatest.Watermarks(t, bootstrap, orders)
	require.Eventually(t, func() bool {
		marks, err := onOrders()
		return err == nil && kafkatest.Total(marks) == 5 && count(store.StatusScheduled, "") == 0 &&
			count(store.StatusParked, store.ReasonExhausted) == 3 && count(store.StatusParked, store.ReasonUnroutable) == 2
	}, 4*time.Minute, time.Second, "3 parked exhausted, 2 parked unroutable, 5 redriven to the orders topic, none scheduled")

	cli := func(args ...string) string {
		cmd := exec.Command(filepath.Join(dir, "dlq-admin"), args...)
		cmd.Env = append(os.Environ(), "DLQ_ADMIN_URL=http://"+adminAddr, "DLQ_ADMIN_TOKEN=dev-admin-token")
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "dlq-admin %v: %s", args, out)
		return string(out)
	}
	require.Contains(t, cli("stats"), "exhausted")
	var page struct {
		Records []struct{ Status, Reason string }
	}
	require.NoError(t, json.Unmarshal([]byte(cli("list", "--status", "parked", "-o", "json")), &page))
	require.Len(t, page.Records, 5, "the CLI lists the parked records")
	cli("bulk", "replay", "--park-reason", "unroutable", "--to", orders, "--yes")
	require.Eventually(t, func() bool { return count(store.StatusReplayed, "") == 2 }, 2*time.Minute, time.Second,
		"the unroutable records are replayed")
	require.EqualValues(t, 3, count(store.StatusParked, ""), "the exhausted ones wait for a human")

	// On the orders topic: the 5 redriven and the 2 replayed records.
	marks, err := onOrders()
	require.NoError(t, err)
	require.EqualValues(t, 7, kafkatest.Total(marks))
}

func waitReady(t *testing.T, addr string) {
	t.Helper()
	require.Eventually(t, func() bool {
		resp, err := http.Get("http://" + addr + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, 2*time.Minute, 200*time.Millisecond, "%s never became ready", addr)
}
