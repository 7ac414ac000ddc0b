package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// `dlq-worker run` with a route whose not_retryable holds a bad pattern refuses to start:
// it exits 1 naming the route and the key, before it connects to anything (the broker and
// the database named here do not exist).
func TestBadNotRetryablePatternRefusesStartUp(t *testing.T) {
	if cfg := os.Getenv("DLQ_TEST_WORKER_MAIN"); cfg != "" {
		os.Args = []string{"dlq-worker", "run", "-c", cfg}
		main()
		return
	}
	cfg := filepath.Join(t.TempDir(), "worker.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte(`database:
  url: postgres://nobody@127.0.0.1:1/none
kafka:
  bootstrap_servers: 127.0.0.1:1
routes:
  - name: orders
    topics: [orders.dlq]
    not_retryable: [SerializationException, "^(("]
`), 0o600))
	cmd := exec.Command(os.Args[0], "-test.run=^"+t.Name()+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), "DLQ_TEST_WORKER_MAIN="+cfg)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	require.True(t, errors.As(err, &exit), "the worker started: %v\n%s", err, out)
	require.Equal(t, 1, exit.ExitCode())
	require.Contains(t, string(out), `dlq-worker: config: routes[orders].not_retryable: pattern "^((": error parsing regexp`)
}
