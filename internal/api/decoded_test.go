package api_test

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"math/big"
	"net/http"
	"strings"
	"testing"

	"github.com/hamba/avro/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/api"
	"github.com/dlqops/dlq/internal/schemas"
	"github.com/dlqops/dlq/internal/schemas/schematest"
	"github.com/dlqops/dlq/internal/store"
	"github.com/dlqops/dlq/internal/store/storetest"
	"github.com/dlqops/dlq/internal/testenv"
)

const paymentAvro = `{"type":"record","name":"Payment","namespace":"pay","fields":[
 {"name":"id","type":"string"},
 {"name":"amount","type":{"type":"bytes","logicalType":"decimal","precision":9,"scale":2}},
 {"name":"memo","type":["null","string"],"default":null}]}`

type payment struct {
	ID     string   `avro:"id"`
	Amount *big.Rat `avro:"amount"`
	Memo   *string  `avro:"memo"`
}

// withSchemas serves the API with the stack's registry.
func withSchemas(t *testing.T, url string) func(*api.Config) {
	r, err := schemas.New(schemas.Config{URL: url}, prometheus.NewRegistry())
	require.NoError(t, err)
	t.Cleanup(r.Close)
	return func(c *api.Config) { c.Schemas = r }
}

func avroPayment(t *testing.T, id int, p payment) []byte {
	t.Helper()
	data, err := avro.Marshal(avro.MustParse(paymentAvro), p)
	require.NoError(t, err)
	return schematest.Wire(id, data)
}

// GET /v1/records/{id} gives each key and value in the wire format decoded beside its
// bytes: Avro, Protobuf and JSON Schema; an unknown schema id says so and keeps the bytes.
func TestRecordDecoded(t *testing.T) {
	t.Parallel()
	sr := schematest.Connect(t)
	avroID, avroSubject := sr.Register(t, "AVRO", strings.Replace(paymentAvro, `"name":"Payment"`,
		`"name":"Payment","doc":"`+testenv.UniqueName("payment ")+`"`, 1))
	protoID, _ := sr.Register(t, "PROTOBUF", `syntax = "proto3"; package pay; message Refund { string id = 1; int64 cents = 2; }`)
	jsonID, _ := sr.Register(t, "JSON", `{"type":"object","properties":{"id":{"type":"string"}}}`)
	b := setupWith(t, storetest.New(t), withSchemas(t, sr.URL))

	memo := "rent"
	refund := []byte{0x0a, 0x02, 'r', '1', 0x10, 0xf4, 0x03} // id "r1", cents 500
	values := [][]byte{
		avroPayment(t, avroID, payment{ID: "p1", Amount: big.NewRat(1050, 100), Memo: &memo}),
		schematest.Wire(protoID, append([]byte{0}, refund...)),
		schematest.Wire(jsonID, []byte(`{"id": "j1"}`)),
		schematest.Wire(1<<30, []byte{1, 2, 3}),
	}
	keyID := avroID
	ids := b.park("payments", len(values), func(i int, r *store.NewRecord) {
		r.Value = values[i]
		if i == 0 {
			r.Key = avroPayment(t, keyID, payment{ID: "k", Amount: big.NewRat(1, 1)})
		}
	})

	get := func(id int64) api.RecordDetail {
		r := b.do("GET", path("/v1/records/%d", id), viewerToken, nil)
		require.Equal(t, http.StatusOK, r.status, string(r.body))
		var d api.RecordDetail
		r.decode(t, &d)
		return d
	}
	d := get(ids[0])
	require.NotNil(t, d.ValueDecoded)
	require.Equal(t, api.DecodedFormat("avro"), d.ValueDecoded.Format)
	require.Equal(t, avroID, d.ValueDecoded.SchemaID)
	require.Equal(t, avroSubject, d.ValueDecoded.Subject)
	require.Equal(t, 1, d.ValueDecoded.Version)
	require.Contains(t, d.ValueDecoded.Schema, "Payment")
	require.JSONEq(t, `{"id":"p1","amount":"10.50","memo":"rent"}`, string(d.ValueDecoded.JSON))
	require.NotNil(t, d.KeyDecoded)
	require.JSONEq(t, `{"id":"k","amount":"1.00","memo":null}`, string(d.KeyDecoded.JSON))
	require.Equal(t, base64.StdEncoding.EncodeToString(values[0]), d.Value.Base64, "the bytes stay beside the JSON")

	d = get(ids[1])
	require.Equal(t, api.DecodedFormat("protobuf"), d.ValueDecoded.Format)
	require.JSONEq(t, `{"id":"r1","cents":"500"}`, string(d.ValueDecoded.JSON))
	require.Nil(t, d.KeyDecoded, "a key outside the wire format is not decoded")

	d = get(ids[2])
	require.Equal(t, api.DecodedFormat("json"), d.ValueDecoded.Format)
	require.JSONEq(t, `{"id":"j1"}`, string(d.ValueDecoded.JSON))

	d = get(ids[3])
	require.Equal(t, 1<<30, d.ValueDecoded.SchemaID)
	require.Empty(t, d.ValueDecoded.JSON)
	require.Contains(t, d.ValueDecoded.Error, "the registry has no schema 1073741824")
	require.Equal(t, base64.StdEncoding.EncodeToString(values[3]), d.Value.Base64)
}

// A replay's value_json is encoded under the record's schema id and validated first: a
// field that does not fit is refused with 422 naming it; the audit row shows the JSON.
func TestReplayValueJSON(t *testing.T) {
	t.Parallel()
	sr := schematest.Connect(t)
	id, _ := sr.Register(t, "AVRO", paymentAvro)
	withReg := withSchemas(t, sr.URL)
	b := setupWith(t, storetest.New(t), withReg)
	orig := avroPayment(t, id, payment{ID: "p1", Amount: big.NewRat(1050, 100)})
	ids := b.park("payments", 1, func(_ int, r *store.NewRecord) { r.Value = orig })

	bad := b.do("POST", path("/v1/records/%d/replay", ids[0]), operatorToken,
		map[string]any{"value_json": map[string]any{"id": "p1", "amount": "10.505"}})
	require.Equal(t, http.StatusUnprocessableEntity, bad.status, string(bad.body))
	p := bad.problem(t)
	require.Equal(t, "urn:dlq:problem:schema-mismatch", p.Type)
	require.Equal(t, "value_json.amount", p.Field)

	r := b.do("POST", path("/v1/records/%d/replay", ids[0]), operatorToken,
		map[string]any{"value_json": map[string]any{"id": "p1", "amount": "12.00", "memo": "fixed"}})
	require.Equal(t, http.StatusAccepted, r.status, string(r.body))
	var job api.Job
	r.decode(t, &job)
	ctx := context.Background()
	stored, err := b.store.GetJob(ctx, job.ID)
	require.NoError(t, err)
	require.True(t, stored.Edit.ValueSet)
	sent := stored.Edit.Value
	require.Equal(t, byte(0), sent[0], "magic byte")
	require.Equal(t, uint32(id), binary.BigEndian.Uint32(sent[1:5]), "the record's schema id")
	reg, err := schemas.New(schemas.Config{URL: sr.URL}, nil)
	require.NoError(t, err)
	t.Cleanup(reg.Close)
	require.JSONEq(t, `{"id":"p1","amount":"12.00","memo":"fixed"}`, string(reg.Decode(sent).JSON))

	entries, err := b.store.ListAudit(ctx, 0, 10)
	require.NoError(t, err)
	var reason string
	for _, e := range entries {
		if e.JobID == job.ID {
			reason = e.Reason
		}
	}
	require.Contains(t, reason, `value_json {"amount":"12.00","id":"p1","memo":"fixed"}`)

	// Without a registry there is nothing to encode with.
	plain := setupWith(t, storetest.New(t))
	pid := plain.park("payments", 1, func(_ int, r *store.NewRecord) { r.Value = orig })
	r = plain.do("POST", path("/v1/records/%d/replay", pid[0]), operatorToken, map[string]any{"value_json": map[string]any{"id": "x"}})
	require.Equal(t, http.StatusUnprocessableEntity, r.status, string(r.body))
	require.Equal(t, "value_json", r.problem(t).Field)
}
