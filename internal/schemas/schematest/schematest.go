// Package schematest registers schemas in the stack's real Schema Registry and frames
// data in the Confluent wire format, as producers do, for the tests of every package
// that shows decoded payloads.
package schematest

import (
	"encoding/binary"
	"net/http"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/confluentinc/confluent-kafka-go/v2/schemaregistry"
	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/testenv"
)

// Registry is a client of the stack's registry.
type Registry struct {
	URL    string
	client schemaregistry.Client
}

// Connect returns a client of SCHEMA_REGISTRY_URL.
func Connect(t testing.TB) *Registry {
	t.Helper()
	url := testenv.SchemaRegistryURL(t)
	cfg := schemaregistry.NewConfig(url)
	cfg.HTTPClient = &http.Client{Transport: &http.Transport{}}
	t.Cleanup(cfg.HTTPClient.CloseIdleConnections)
	c, err := schemaregistry.NewClient(cfg)
	require.NoError(t, err)
	return &Registry{URL: url, client: c}
}

// Register registers schema text of schemaType ("AVRO", "PROTOBUF", "JSON") under a
// subject unique to this test and returns its id and subject.
func (r *Registry) Register(t testing.TB, schemaType, text string) (id int, subject string) {
	t.Helper()
	subject = testenv.UniqueName("dlq-test-") + "-value"
	unlock := registering(t)
	defer unlock()
	id, err := r.client.Register(subject, schemaregistry.SchemaInfo{Schema: text, SchemaType: schemaType}, false)
	require.NoError(t, err, "register %s schema", schemaType)
	return id, subject
}

// RegisterVersion registers schema text as the next version of subject and returns its id.
func (r *Registry) RegisterVersion(t testing.TB, subject, schemaType, text string) (id int) {
	t.Helper()
	unlock := registering(t)
	defer unlock()
	id, err := r.client.Register(subject, schemaregistry.SchemaInfo{Schema: text, SchemaType: schemaType}, false)
	require.NoError(t, err, "register %s schema under %s", schemaType, subject)
	return id
}

// Wire frames data under schema id: magic byte 0, the id big-endian, the data.
func Wire(id int, data []byte) []byte {
	out := []byte{0, 0, 0, 0, 0}
	binary.BigEndian.PutUint32(out[1:], uint32(id))
	return append(out, data...)
}

// registering holds a lock shared by every test process: the stack's registry keeps its
// schemas in an in-memory H2 whose sequence table deadlocks two registrations at once
// (each waits on the other's lock until H2 times out and the registry answers 500).
// Reads, all that dlq-admin does, are not affected.
func registering(t testing.TB) (unlock func()) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(os.TempDir(), "dlq-schema-registry-register.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	require.NoError(t, err)
	require.NoError(t, syscall.Flock(int(f.Fd()), syscall.LOCK_EX))
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		_ = f.Close()
	}
}
