package proctest_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/testenv/proctest"
)

// The address comes from the server's own log line, once it is written.
func TestServingAddrReadsTheBoundPortFromTheLog(t *testing.T) {
	log := filepath.Join(t.TempDir(), "worker.log")
	require.NoError(t, os.WriteFile(log, []byte(`{"level":"info","message":"starting","addr":"0.0.0.0:1"}`+"\nnot json\n"), 0o600))
	go func() {
		time.Sleep(200 * time.Millisecond)
		f, err := os.OpenFile(log, os.O_APPEND|os.O_WRONLY, 0)
		if err == nil {
			_, _ = f.WriteString(`{"level":"info","addr":"127.0.0.1:40123","tls":false,"message":"serving /healthz /readyz /metrics"}` + "\n")
			_ = f.Close()
		}
	}()
	require.Equal(t, "127.0.0.1:40123", proctest.ServingAddr(t, log, time.Minute))
}
