package testenv

import (
	"os"
	"testing"
)

// SchemaRegistryURL returns SCHEMA_REGISTRY_URL (the stack's Confluent-compatible
// registry) or fails the test. Tests register schemas under subjects of their own.
func SchemaRegistryURL(t testing.TB) string {
	t.Helper()
	Integration(t)
	u := os.Getenv("SCHEMA_REGISTRY_URL")
	if u == "" {
		t.Fatalf("SCHEMA_REGISTRY_URL is not set: %s", hint)
	}
	return u
}
