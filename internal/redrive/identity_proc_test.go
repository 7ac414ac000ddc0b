package redrive_test

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/store/storetest"
	"github.com/dlqops/dlq/internal/testenv"
	"github.com/dlqops/dlq/internal/testenv/kafkatest"
	"github.com/dlqops/dlq/internal/testenv/proctest"
)

// Two dlq-worker processes given one group_instance_id: the older is fenced when the
// newer joins, says so in /readyz and its log, and keeps running, not ready, naming the
// duplicate, instead of exiting into a crash loop that would fence the newer in turn; the
// newer stays ready. `dlq-worker health` (the image's HEALTHCHECK) exits 1 on the older,
// with the reason, and 0 on the newer.
func TestTwoWorkersWithOneIdentity(t *testing.T) {
	t.Parallel()
	bs := testenv.KafkaBootstrap(t)
	dlq := kafkatest.CreateTopic(t, bs, 1, nil)
	_, dbURL := storetest.NewWithURL(t)
	name := testenv.UniqueName("dup-")
	identity := testenv.UniqueName("worker-")
	bin := buildWorker(t)
	start := func(who string) (*proctest.Proc, string, string) {
		dir := t.TempDir()
		cfg := proctest.WorkerConfig{DatabaseURL: dbURL, Bootstrap: bs, Route: name, Topic: dlq, GroupInstance: identity}.Write(t, dir)
		raw, err := os.ReadFile(cfg)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(cfg, []byte(strings.Replace(string(raw), "127.0.0.1:0", freeAddr(t), 1)), 0o600))
		logPath := filepath.Join(dir, who+".log")
		return startWorker(t, cfg, logPath), cfg, logPath
	}
	health := func(cfg string) (string, error) {
		out, err := exec.Command(bin, "health", "--config", cfg).CombinedOutput()
		return string(out), err
	}

	older, olderCfg, olderLog := start("older")
	require.Eventually(t, func() bool { _, err := health(olderCfg); return err == nil }, 2*time.Minute, 200*time.Millisecond, "the first worker never became ready")
	newer, newerCfg, _ := start("newer")

	var out string
	var err error
	require.Eventually(t, func() bool {
		out, err = health(olderCfg)
		return err != nil && strings.Contains(out, "duplicate group.instance.id")
	}, 2*time.Minute, 200*time.Millisecond, "the fenced worker never named the duplicate: %v %s", err, out)
	require.Contains(t, out, identity+"."+name+" is held by another live consumer of group dlq-worker."+name)
	logs, rerr := os.ReadFile(olderLog)
	require.NoError(t, rerr)
	require.Contains(t, string(logs), "fenced by a consumer with this route's group.instance.id")
	require.Contains(t, string(logs), "two workers share one identity")

	out, err = health(newerCfg)
	require.NoError(t, err, "the newer worker is not ready: %s", out)
	for _, p := range []*proctest.Proc{older, newer} {
		select {
		case <-p.Done():
			t.Fatalf("a worker exited: %v", p.Err())
		default:
		}
	}
	require.NoError(t, newer.Term(workerGrace))
	require.Error(t, older.Term(workerGrace), "the fenced worker's route did not work: it exits 1 when stopped")
}

// freeAddr is a loopback address with a port nothing listens on now.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().String()
}
