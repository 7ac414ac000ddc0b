// Package testenv gives integration tests the real Kafka broker and PostgreSQL server
// named by the environment (KAFKA_BOOTSTRAP_SERVERS, DATABASE_URL), each test isolated in
// its own schema or topics. `make test` starts the local stack and sets both variables.
package testenv

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

const hint = "run the suite with `make test`, which starts the local stack, or export it yourself"

// DatabaseURL returns DATABASE_URL or fails the test.
func DatabaseURL(t testing.TB) string {
	t.Helper()
	Integration(t)
	u := os.Getenv("DATABASE_URL")
	if u == "" {
		t.Fatalf("DATABASE_URL is not set: %s", hint)
	}
	return u
}

// KafkaBootstrap returns KAFKA_BOOTSTRAP_SERVERS or fails the test.
func KafkaBootstrap(t testing.TB) string {
	t.Helper()
	Integration(t)
	b := os.Getenv("KAFKA_BOOTSTRAP_SERVERS")
	if b == "" {
		t.Fatalf("KAFKA_BOOTSTRAP_SERVERS is not set: %s", hint)
	}
	return b
}

// UniqueName returns prefix followed by random hex, a name no other test run uses.
func UniqueName(prefix string) string {
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand never fails on Linux
	}
	return prefix + hex.EncodeToString(b[:])
}

// Schema creates an empty schema for this test, dropped when the test ends, and returns
// a connection string whose sessions use it as their search_path.
func Schema(t testing.TB) string {
	t.Helper()
	base := DatabaseURL(t)
	name := UniqueName("t_")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatalf("connect to DATABASE_URL: %v", err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+name); err != nil {
		t.Fatalf("create schema: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, base)
		if err != nil {
			t.Logf("drop schema %s: %v", name, err)
			return
		}
		defer conn.Close(context.Background())
		if _, err := conn.Exec(ctx, "DROP SCHEMA "+name+" CASCADE"); err != nil {
			t.Logf("drop schema %s: %v", name, err)
		}
	})
	return WithSearchPath(t, base, name)
}

// WithSearchPath returns connString with its sessions' search_path set to schema.
func WithSearchPath(t testing.TB, connString, schema string) string {
	t.Helper()
	u, err := url.Parse(connString)
	if err != nil || !strings.HasPrefix(u.Scheme, "postgres") {
		t.Fatalf("DATABASE_URL must be a postgres:// URL: %v", err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// BenchSize returns the benchmark size named by the environment variable name, or def
// when it is unset; a value that is not a number of at least min fails the benchmark.
func BenchSize(b testing.TB, name string, def, min int) int {
	b.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < min {
		b.Fatalf("%s=%q: want a number >= %d", name, v, min)
	}
	return n
}

// ReadPath is the worker read path (read_path) the redrive tests run their engines and
// workers on: DLQ_TEST_READ_PATH, queue or poll; empty is the worker's default.
// `make test` runs the redrive suite once on each.
func ReadPath() string { return os.Getenv("DLQ_TEST_READ_PATH") }
