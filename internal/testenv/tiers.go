package testenv

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// Integration marks a test that needs the stack (Kafka, PostgreSQL, Java or a browser):
// `go test -short` (`make test-unit`) skips it, `make test` runs it. The helpers that hand
// out the stack (DatabaseURL, KafkaBootstrap, StartPGServer, the kafkatest brokers) call
// it themselves; a test that needs the stack some other way calls it first.
func Integration(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("needs the stack (Kafka, PostgreSQL, Java or a browser): -short runs the unit tier only")
	}
}

// CacheDir is where scripts/stack.sh keeps the local stack, the Kafka jars and what the
// tests build: DLQ_CACHE_DIR, or .cache in the repository.
func CacheDir(t testing.TB) string {
	t.Helper()
	if dir := os.Getenv("DLQ_CACHE_DIR"); dir != "" {
		return dir
	}
	return filepath.Join(RepoRoot(t), ".cache")
}

// RepoRoot walks up from the test's working directory to the folder holding go.mod.
func RepoRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if raw, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && bytes.Contains(raw, []byte("module github.com/dlqops/dlq\n")) {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("repository root (go.mod) not found above the test's directory")
		}
		dir = parent
	}
}
