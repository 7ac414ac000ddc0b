package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/testenv"
)

// The whole loop, as `make demo` runs it but smaller and faster: a service whose
// downstream is down dead-letters every order, the worker re-drives them, poison orders
// are parked after max_retries, an operator replays them through the admin API once the
// bug is fixed, and every order ends up processed; the worker's audit agrees. run fails
// on any missing order or audit finding.
func TestWholeLoopConserves(t *testing.T) {
	testenv.KafkaBootstrap(t)
	testenv.DatabaseURL(t)
	bin := t.TempDir()
	for _, pkg := range []string{"../../cmd/dlq-worker", "../../cmd/dlq-admin", "../orders-service"} {
		out, err := exec.Command("go", "build", "-o", bin+string(os.PathSeparator), pkg).CombinedOutput()
		require.NoError(t, err, "go build %s: %s", pkg, out)
	}
	dir := t.TempDir()
	err := run(options{
		orders: 600, poisonEvery: 60, downFor: 5 * time.Second, timeout: 5 * time.Minute,
		dir: dir, bin: bin, schedule: "* * * * * *", backoff: "{base: 500ms, factor: 2, cap: 2s, jitter: 0}",
	})
	if err != nil {
		for _, name := range []string{"dlq-worker", "dlq-admin", "orders-service"} {
			if log, rerr := os.ReadFile(filepath.Join(dir, name+".log")); rerr == nil {
				t.Logf("%s log (tail):\n%s", name, tail(log, 3000))
			}
		}
	}
	require.NoError(t, err)
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}
