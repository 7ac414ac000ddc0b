package schemas_test

import (
	"context"
	"encoding/json"
	"errors"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/bufbuild/protocompile"
	"github.com/hamba/avro/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/dlqops/dlq/internal/schemas"
	"github.com/dlqops/dlq/internal/schemas/schematest"
	"github.com/dlqops/dlq/internal/testenv"
)

const orderAvro = `{"type":"record","name":"Order","namespace":"shop","fields":[
 {"name":"id","type":"long"},
 {"name":"note","type":["null","string"],"default":null},
 {"name":"item","type":[{"type":"record","name":"Item","fields":[{"name":"sku","type":"string"}]},"int"]},
 {"name":"placed_at","type":{"type":"long","logicalType":"timestamp-millis"}},
 {"name":"amount","type":{"type":"bytes","logicalType":"decimal","precision":9,"scale":2}},
 {"name":"status","type":{"type":"enum","name":"Status","symbols":["NEW","PAID"]}}
]}`

// order is how a producer writes shop.Order with hamba/avro.
type order struct {
	ID       int64          `avro:"id"`
	Note     *string        `avro:"note"`
	Item     map[string]any `avro:"item"`
	PlacedAt time.Time      `avro:"placed_at"`
	Amount   *big.Rat       `avro:"amount"`
	Status   string         `avro:"status"`
}

func newRegistry(t *testing.T, url string) *schemas.Registry {
	t.Helper()
	r, err := schemas.New(schemas.Config{URL: url}, prometheus.NewRegistry())
	require.NoError(t, err)
	t.Cleanup(r.Close)
	return r
}

func avroOrder(t *testing.T, id int) []byte {
	t.Helper()
	note := "leave at door"
	data, err := avro.Marshal(avro.MustParse(orderAvro), order{ID: 42, Note: &note,
		Item:     map[string]any{"shop.Item": map[string]any{"sku": "A-1"}},
		PlacedAt: time.UnixMilli(1700000000123).UTC(), Amount: big.NewRat(1999, 100), Status: "PAID"})
	require.NoError(t, err)
	return schematest.Wire(id, data)
}

// An Avro value with a record, unions and logical types decodes into JSON in field
// order, with the subject and version the registry gives for its id.
func TestDecodeAvro(t *testing.T) {
	sr := schematest.Connect(t)
	// The registry gives one id to the same schema under any subject: a doc of its own
	// makes this test's schema (and subject) its own.
	id, subject := sr.Register(t, "AVRO", strings.Replace(orderAvro, `"name":"Order"`,
		`"name":"Order","doc":"`+testenv.UniqueName("order ")+`"`, 1))
	d := newRegistry(t, sr.URL).Decode(avroOrder(t, id))
	require.NotNil(t, d)
	require.Empty(t, d.Error)
	require.Equal(t, schemas.FormatAvro, d.Format)
	require.Equal(t, id, d.SchemaID)
	require.Equal(t, subject, d.Subject)
	require.Equal(t, 1, d.Version)
	require.Contains(t, d.Schema, `"Order"`)
	require.Equal(t, `{"id":42,"note":"leave at door","item":{"shop.Item":{"sku":"A-1"}},`+
		`"placed_at":"2023-11-14T22:13:20.123Z","amount":"19.99","status":"PAID"}`, string(d.JSON))
}

// An operator's JSON edit is encoded under the record's schema id, and decodes back to
// the edit; a value that does not fit names the field.
func TestEncodeAvroEdit(t *testing.T) {
	sr := schematest.Connect(t)
	id, _ := sr.Register(t, "AVRO", orderAvro)
	r := newRegistry(t, sr.URL)
	orig := avroOrder(t, id)
	edit := `{"id":42,"note":null,"item":{"int":7},"placed_at":"2023-11-14T22:13:20.123Z","amount":"5.10","status":"NEW"}`
	out, err := r.Encode(orig, []byte(edit))
	require.NoError(t, err)
	require.Equal(t, orig[:5], out[:5], "magic byte 0 and the same schema id")
	d := r.Decode(out)
	require.Empty(t, d.Error)
	require.JSONEq(t, `{"id":42,"note":null,"item":{"int":7},"placed_at":"2023-11-14T22:13:20.123Z","amount":"5.10","status":"NEW"}`, string(d.JSON))

	for doc, path := range map[string]string{
		`{"id":"forty-two","item":{"int":7},"placed_at":"2023-11-14T22:13:20Z","amount":"1","status":"NEW"}`:      "id",
		`{"id":1,"item":{"shop.Item":{"sku":3}},"placed_at":"2023-11-14T22:13:20Z","amount":"1","status":"NEW"}`:  "item.sku",
		`{"id":1,"item":{"int":7},"placed_at":"2023-11-14T22:13:20Z","amount":"1.234","status":"NEW"}`:            "amount",
		`{"id":1,"item":{"int":7},"placed_at":"2023-11-14T22:13:20Z","amount":"1","status":"LOST"}`:               "status",
		`{"id":1,"item":{"int":7},"placed_at":"2023-11-14T22:13:20Z","amount":"1","status":"NEW","colour":"red"}`: "colour",
		`{"item":{"int":7},"placed_at":"2023-11-14T22:13:20Z","amount":"1","status":"NEW"}`:                       "id",
	} {
		_, err := r.Encode(orig, []byte(doc))
		var fe *schemas.FieldError
		require.ErrorAs(t, err, &fe, doc)
		require.Equal(t, path, fe.Path, "%s: %v", doc, err)
	}
}

const shopProto = `syntax = "proto3";
package shop;
message Header { string trace = 1; }
message Line {
  string sku = 1;
  int32 qty = 2;
  message Note { string text = 1; }
  Note note = 3;
}`

// A Protobuf value names its message by the message indexes (here the nested Line.Note
// and the second top-level message) and decodes with the registry's .proto.
func TestDecodeProtobuf(t *testing.T) {
	sr := schematest.Connect(t)
	id, _ := sr.Register(t, "PROTOBUF", shopProto)
	files, err := (&protocompile.Compiler{Resolver: &protocompile.SourceResolver{
		Accessor: protocompile.SourceAccessorFromMap(map[string]string{"shop.proto": shopProto})}}).Compile(context.Background(), "shop.proto")
	require.NoError(t, err)
	line := dynamicpb.NewMessage(files[0].Messages().ByName("Line"))
	line.Set(line.Descriptor().Fields().ByName("sku"), protoValue("B-2"))
	line.Set(line.Descriptor().Fields().ByName("qty"), protoValue(int32(3)))
	data, err := proto.Marshal(line)
	require.NoError(t, err)
	r := newRegistry(t, sr.URL)
	// Message indexes [1]: a count of 1, then index 1, zig-zag varints.
	d := r.Decode(schematest.Wire(id, append([]byte{2, 2}, data...)))
	require.Empty(t, d.Error)
	require.Equal(t, schemas.FormatProtobuf, d.Format)
	require.JSONEq(t, `{"sku":"B-2","qty":3}`, string(d.JSON))

	out, err := r.Encode(schematest.Wire(id, append([]byte{2, 2}, data...)), []byte(`{"sku":"B-2","qty":9}`))
	require.NoError(t, err)
	require.JSONEq(t, `{"sku":"B-2","qty":9}`, string(r.Decode(out).JSON))
	_, err = r.Encode(out, []byte(`{"sku":"B-2","qty":"many"}`))
	var fe *schemas.FieldError
	require.ErrorAs(t, err, &fe)
	require.Equal(t, "qty", fe.Path, err.Error())
}

const itemJSONSchema = `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object",
 "properties":{"sku":{"type":"string"},"qty":{"type":"integer","minimum":1}},"required":["sku"]}`

// A JSON Schema value decodes as its JSON; an edit is validated against the schema.
func TestJSONSchema(t *testing.T) {
	sr := schematest.Connect(t)
	id, _ := sr.Register(t, "JSON", itemJSONSchema)
	r := newRegistry(t, sr.URL)
	orig := schematest.Wire(id, []byte(`{"sku": "C-3", "qty": 2}`))
	d := r.Decode(orig)
	require.Empty(t, d.Error)
	require.Equal(t, schemas.FormatJSON, d.Format)
	require.Equal(t, `{"sku":"C-3","qty":2}`, string(d.JSON))

	_, err := r.Encode(orig, []byte(`{"sku":"C-3","qty":0}`))
	var fe *schemas.FieldError
	require.ErrorAs(t, err, &fe)
	require.Equal(t, "qty", fe.Path, err.Error())
	out, err := r.Encode(orig, []byte(`{"sku":"C-3","qty":5}`))
	require.NoError(t, err)
	require.Equal(t, `{"sku":"C-3","qty":5}`, string(r.Decode(out).JSON))
}

// A schema id the registry does not know, or bytes that do not fit their schema, say
// why instead of decoding; bytes outside the wire format are not the registry's.
func TestDecodeFailuresSayWhy(t *testing.T) {
	sr := schematest.Connect(t)
	id, _ := sr.Register(t, "AVRO", orderAvro)
	r := newRegistry(t, sr.URL)

	unknown := r.Decode(schematest.Wire(1<<30, []byte{1, 2, 3}))
	require.NotNil(t, unknown)
	require.Nil(t, unknown.JSON)
	require.Equal(t, 1<<30, unknown.SchemaID)
	require.Contains(t, unknown.Error, "the registry has no schema 1073741824")

	bad := r.Decode(schematest.Wire(id, []byte{0xff}))
	require.Nil(t, bad.JSON)
	require.Contains(t, bad.Error, "do not decode with avro schema")

	require.Nil(t, r.Decode([]byte(`{"plain":"json"}`)))
	require.Nil(t, r.Decode(nil))
	_, err := r.Encode([]byte("plain"), []byte(`{}`))
	require.True(t, errors.Is(err, schemas.ErrNotWireFormat))
	var js map[string]any
	require.Error(t, json.Unmarshal(bad.JSON, &js))
}

func protoValue(v any) protoreflect.Value { return protoreflect.ValueOf(v) }
