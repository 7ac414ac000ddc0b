package main

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/auth"
	"github.com/dlqops/dlq/internal/store/storetest"
	"github.com/dlqops/dlq/internal/testenv/proctest"
)

// built is the dlq-admin binary the process tests share, built once as a user builds it.
var built struct {
	once sync.Once
	dir  string
	err  error
}

// adminBinary builds dlq-admin (go build, no -race) once for the package's tests.
func adminBinary(t *testing.T) string {
	t.Helper()
	built.once.Do(func() {
		built.dir, built.err = os.MkdirTemp("", "dlq-admin-bin-")
		if built.err == nil {
			built.err = proctest.Build(built.dir, "github.com/dlqops/dlq/cmd/dlq-admin")
		}
	})
	require.NoError(t, built.err)
	return filepath.Join(built.dir, "dlq-admin")
}

// adminProcess is a dlq-admin serving on a fresh schema.
type adminProcess struct {
	proc *proctest.Proc
	url  string
	// token is an operator token of the configuration.
	token string
}

// startAdmin runs `dlq-admin serve` on a migrated schema of its own, with extra appended
// to its configuration, and waits until it is ready.
func startAdmin(t *testing.T, extra string) adminProcess {
	t.Helper()
	bin := adminBinary(t)
	_, dbURL := storetest.NewWithURL(t)
	dir := t.TempDir()
	token := auth.NewToken()
	cfg := filepath.Join(dir, "admin.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte(fmt.Sprintf(`log: {level: info, format: json}
http: {listen: %q}
database: {url: %q}
shutdown_grace: 5s
tokens:
  - {name: otto, role: operator, sha256: %s}
%s`, "127.0.0.1:0", dbURL, auth.Hash(token), extra)), 0o600))
	logPath := filepath.Join(dir, "admin.log")
	p := proctest.StartService(t, logPath, nil, 10*time.Second, bin, "serve", "--config", cfg)
	// The server binds a port of its own and logs it: no port is probed and released.
	url := "http://" + proctest.ServingAddr(t, logPath, time.Minute)
	require.Eventually(t, func() bool {
		res, err := http.Get(url + "/readyz")
		if err != nil {
			return false
		}
		res.Body.Close()
		return res.StatusCode == http.StatusOK
	}, time.Minute, 100*time.Millisecond, "dlq-admin not ready")
	return adminProcess{proc: p, url: url, token: token}
}
