// Package schematest registers schemas in the stack's real Schema Registry and frames
// data in the Confluent wire format, as producers do, for the tests of every package
// that shows decoded payloads.
package schematest

import (
	"encoding/binary"
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
	c, err := schemaregistry.NewClient(schemaregistry.NewConfig(url))
	require.NoError(t, err)
	return &Registry{URL: url, client: c}
}

// Register registers schema text of schemaType ("AVRO", "PROTOBUF", "JSON") under a
// subject unique to this test and returns its id and subject.
func (r *Registry) Register(t testing.TB, schemaType, text string) (id int, subject string) {
	t.Helper()
	subject = testenv.UniqueName("dlq-test-") + "-value"
	id, err := r.client.Register(subject, schemaregistry.SchemaInfo{Schema: text, SchemaType: schemaType}, false)
	require.NoError(t, err, "register %s schema", schemaType)
	return id, subject
}

// Wire frames data under schema id: magic byte 0, the id big-endian, the data.
func Wire(id int, data []byte) []byte {
	out := []byte{0, 0, 0, 0, 0}
	binary.BigEndian.PutUint32(out[1:], uint32(id))
	return append(out, data...)
}
