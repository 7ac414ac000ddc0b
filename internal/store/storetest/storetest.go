// Package storetest gives tests of other packages a migrated store in a schema of their own.
package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/dlqops/dlq/internal/store"
	"github.com/dlqops/dlq/internal/testenv"
)

// New returns a store on a fresh, migrated schema that is dropped when the test ends.
func New(t testing.TB, opts ...store.Option) *store.Store {
	t.Helper()
	s, _ := NewWithURL(t, opts...)
	return s
}

// NewWithURL is New that also returns the schema's connection string, for tests that
// open their own connections next to the store.
func NewWithURL(t testing.TB, opts ...store.Option) (*store.Store, string) {
	t.Helper()
	url := testenv.Schema(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := store.Migrate(ctx, url); err != nil {
		t.Fatalf("migrate test schema: %v", err)
	}
	s, err := store.Open(ctx, url, opts...)
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	// Registered after the schema's cleanup, so it runs first: close before the drop.
	t.Cleanup(s.Close)
	return s, url
}

// NewPrivate returns a migrated store on a PostgreSQL server of the test's own
// (testenv.StartPGServer), for fault tests that stop or stall the server.
func NewPrivate(t testing.TB) (*store.Store, *testenv.PGServer) {
	t.Helper()
	pg := testenv.StartPGServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := store.Migrate(ctx, pg.URL()); err != nil {
		t.Fatalf("migrate private server: %v", err)
	}
	s, err := store.Open(ctx, pg.URL())
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	t.Cleanup(s.Close) // registered after the server's stop, so it runs first
	return s, pg
}
