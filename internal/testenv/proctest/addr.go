package proctest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"testing"
	"time"
)

// servingMsg is what a binary's HTTP server logs once its port is bound (internal/ops).
const servingMsg = "serving /healthz /readyz /metrics"

// ServingAddr waits until the JSON log at logPath says where the binary's HTTP server
// listens, and returns that address. A test starts the binary on 127.0.0.1:0 and reads the
// port the kernel gave it, instead of picking a free port that another process may bind
// first.
func ServingAddr(t testing.TB, logPath string, timeout time.Duration) string {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		if addr := servingAddr(logPath); addr != "" {
			return addr
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s does not say %q within %v", logPath, servingMsg, timeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func servingAddr(logPath string) string {
	raw, err := os.ReadFile(logPath)
	if err != nil {
		return ""
	}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var line struct{ Message, Addr string }
		if json.Unmarshal(sc.Bytes(), &line) == nil && line.Message == servingMsg && line.Addr != "" {
			return line.Addr
		}
	}
	return ""
}
