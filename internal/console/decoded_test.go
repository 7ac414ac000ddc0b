package console_test

import (
	"fmt"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/hamba/avro/v2"
	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/schemas/schematest"
	"github.com/dlqops/dlq/internal/store"
	"github.com/dlqops/dlq/internal/testenv"
)

// The record page shows a value in the Schema Registry wire format decoded through the
// stack's real registry, pretty-printed, with its schema one click away; an unknown
// schema id says why above the hex dump.
func TestRecordPageDecodesThroughTheRegistry(t *testing.T) {
	e := newEnv(t)
	sr := schematest.Connect(t)
	schema := `{"type":"record","name":"Shipment","namespace":"ship","doc":"` + testenv.UniqueName("console ") +
		`","fields":[{"name":"id","type":"string"},{"name":"weight_g","type":"int"}]}`
	id, subject := sr.Register(t, "AVRO", schema)
	data, err := avro.Marshal(avro.MustParse(schema), map[string]any{"id": "s-9", "weight_g": 1250})
	require.NoError(t, err)
	decodedID := e.park("AvroValue", e.orders, 1, func(_ int, r *store.NewRecord) { r.Value = schematest.Wire(id, data) })[0]
	unknownID := e.park("UnknownSchema", e.orders, 1, func(_ int, r *store.NewRecord) {
		r.Value = schematest.Wire(1<<30, []byte{0x02, 0xff})
	})[0]

	ctx := e.tab(t)
	e.signIn(t, ctx, viewerToken)
	visit(t, ctx, fmt.Sprintf("%s/ui/records/%d", e.url, decodedID), "#value-payload")
	require.Equal(t, "{\n  \"id\": \"s-9\",\n  \"weight_g\": 1250\n}", run(t, ctx, chromedp.TextContent("#value-payload")),
		"the decoded value, pretty-printed")
	require.Equal(t, "avro", text(t, ctx, "#value-format"))
	require.Equal(t, subject+" v1", text(t, ctx, "#value-subject"))
	require.Equal(t, fmt.Sprintf("schema id %d", id), text(t, ctx, "#value-schema"))
	do(t, ctx, chromedp.Click("#value-schema-text summary"), chromedp.WaitVisible("#value-schema-text pre"))
	require.Contains(t, text(t, ctx, "#value-schema-text pre"), `"name": "Shipment"`)
	e.shot(t, ctx, "record-avro-decoded")

	visit(t, ctx, fmt.Sprintf("%s/ui/records/%d", e.url, unknownID), "#value-payload")
	require.Contains(t, text(t, ctx, "#value-decode-error"), "the registry has no schema 1073741824")
	require.Contains(t, run(t, ctx, chromedp.TextContent("#value-payload")), "02 ff", "the bytes after the prefix, as hex")
	e.shot(t, ctx, "record-unknown-schema")
}

// Protobuf (with its message index) and JSON Schema values decode on the record page as
// Avro ones do, through the stack's real registry.
func TestRecordPageDecodesProtobufAndJSONSchema(t *testing.T) {
	e := newEnv(t)
	sr := schematest.Connect(t)
	// Each schema's text is unique to the run: the registry answers an id with the subject
	// that first registered its text.
	protoID, protoSubject := sr.Register(t, "PROTOBUF", `syntax = "proto3"; package `+testenv.UniqueName("ship_")+
		`; message Parcel { string id = 1; int64 weight_g = 2; }`)
	jsonID, jsonSubject := sr.Register(t, "JSON", `{"type":"object","title":"`+testenv.UniqueName("crate ")+
		`","properties":{"id":{"type":"string"},"fragile":{"type":"boolean"}}}`)
	parcel := []byte{0x0a, 0x02, 'p', '7', 0x10, 0xe2, 0x09} // id "p7", weight_g 1250
	protoRec := e.park("ProtobufValue", e.orders, 1, func(_ int, r *store.NewRecord) {
		r.Value = schematest.Wire(protoID, append([]byte{0}, parcel...))
	})[0]
	jsonRec := e.park("JSONSchemaValue", e.orders, 1, func(_ int, r *store.NewRecord) {
		r.Value = schematest.Wire(jsonID, []byte(`{"id":"c3","fragile":true}`))
	})[0]

	ctx := e.tab(t)
	e.signIn(t, ctx, viewerToken)
	for _, c := range []struct {
		record          int64
		format, subject string
		schemaID        int
		pretty, schema  string
		shot            string
	}{
		{protoRec, "protobuf", protoSubject, protoID, "{\n  \"id\": \"p7\",\n  \"weight_g\": \"1250\"\n}", "message Parcel", "record-protobuf-decoded"},
		{jsonRec, "json", jsonSubject, jsonID, "{\n  \"id\": \"c3\",\n  \"fragile\": true\n}", "fragile", "record-jsonschema-decoded"},
	} {
		visit(t, ctx, fmt.Sprintf("%s/ui/records/%d", e.url, c.record), "#value-payload")
		require.Equal(t, c.pretty, run(t, ctx, chromedp.TextContent("#value-payload")), "the decoded %s value, pretty-printed", c.format)
		require.Equal(t, c.format, text(t, ctx, "#value-format"))
		require.Equal(t, c.subject+" v1", text(t, ctx, "#value-subject"))
		require.Equal(t, fmt.Sprintf("schema id %d", c.schemaID), text(t, ctx, "#value-schema"))
		do(t, ctx, chromedp.Click("#value-schema-text summary"), chromedp.WaitVisible("#value-schema-text pre"))
		require.Contains(t, text(t, ctx, "#value-schema-text pre"), c.schema)
		e.shot(t, ctx, c.shot)
	}
}
