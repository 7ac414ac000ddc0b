package api_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/hamba/avro/v2"
	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/api"
	"github.com/dlqops/dlq/internal/schemas"
	"github.com/dlqops/dlq/internal/schemas/schematest"
	"github.com/dlqops/dlq/internal/store"
	"github.com/dlqops/dlq/internal/store/storetest"
)

// orderAvro holds the card number that testMasker's card.number rule hides.
const orderAvro = `{"type":"record","name":"Order","namespace":"shop","fields":[
 {"name":"card","type":{"type":"record","name":"Card","fields":[{"name":"number","type":"string"}]}},
 {"name":"name","type":"string"}]}`

// setupMaskedAvro serves the API with testMasker and the stack's registry, and parks one
// Avro order whose card number is clearCard.
func setupMaskedAvro(t *testing.T) (b *bundle, card string, schemaID int, registryURL string, id int64) {
	t.Helper()
	sr := schematest.Connect(t)
	schemaID, _ = sr.Register(t, "AVRO", orderAvro)
	m := testMasker(t)
	b = setupWith(t, storetest.New(t), withSchemas(t, sr.URL), func(c *api.Config) { c.Masking = m })
	data, err := avro.Marshal(avro.MustParse(orderAvro), map[string]any{"card": map[string]any{"number": clearCard}, "name": "Ann"})
	require.NoError(t, err)
	id = b.park("orders", 1, func(_ int, r *store.NewRecord) { r.Value = schematest.Wire(schemaID, data) })[0]
	return b, m.Placeholder([]byte(clearCard)), schemaID, sr.URL, id
}

// The masking paths reach an Avro record's decoded JSON: every token reads the card number
// as its placeholder, an admin asking with unmask=true reads it in clear.
func TestDecodedValueMasked(t *testing.T) {
	t.Parallel()
	b, card, _, _, id := setupMaskedAvro(t)
	for _, tok := range []string{viewerToken, operatorToken, adminToken, scopedToken} {
		r := b.do("GET", path("/v1/records/%d", id), tok, nil)
		require.Equal(t, http.StatusOK, r.status, string(r.body))
		require.NotContains(t, string(r.body), clearCard)
		var d api.RecordDetail
		r.decode(t, &d)
		require.NotNil(t, d.ValueDecoded)
		require.JSONEq(t, `{"card":{"number":"`+card+`"},"name":"Ann"}`, string(d.ValueDecoded.JSON))
	}
	r := b.do("GET", path("/v1/records/%d?unmask=true", id), adminToken, nil)
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	var d api.RecordDetail
	r.decode(t, &d)
	require.JSONEq(t, `{"card":{"number":"`+clearCard+`"},"name":"Ann"}`, string(d.ValueDecoded.JSON))
}

// An export line carries the decoded value as the record's own answer does, masked for
// every token, an admin's included.
func TestExportDecodedMasked(t *testing.T) {
	t.Parallel()
	b, card, schemaID, _, id := setupMaskedAvro(t)
	for _, tok := range []string{viewerToken, operatorToken, adminToken, scopedToken} {
		r := b.do("GET", "/v1/records/export?original_topic=orders", tok, nil)
		require.Equal(t, http.StatusOK, r.status, string(r.body))
		require.NotContains(t, string(r.body), clearCard)
		sc := bufio.NewScanner(bytes.NewReader(r.body))
		sc.Buffer(nil, 1<<20)
		var lines []api.RecordDetail
		for sc.Scan() {
			var d api.RecordDetail
			require.NoError(t, json.Unmarshal(sc.Bytes(), &d))
			lines = append(lines, d)
		}
		require.Len(t, lines, 1)
		d := lines[0]
		require.Equal(t, id, d.Record.ID)
		require.NotNil(t, d.ValueDecoded, "the export carries the decoded value")
		require.Equal(t, api.DecodedFormat("avro"), d.ValueDecoded.Format)
		require.Equal(t, schemaID, d.ValueDecoded.SchemaID)
		require.JSONEq(t, `{"card":{"number":"`+card+`"},"name":"Ann"}`, string(d.ValueDecoded.JSON))

		own := b.do("GET", path("/v1/records/%d", id), tok, nil)
		line, err := json.Marshal(d)
		require.NoError(t, err)
		require.JSONEq(t, string(own.body), string(line), "a line is the record's own answer")
	}
}

// A value_json edit that keeps the card number's placeholder replays the stored clear
// number under the record's schema id; a placeholder the record does not hold is a 400
// naming value_json.
func TestReplayValueJSONKeepsMasked(t *testing.T) {
	t.Parallel()
	b, card, schemaID, url, id := setupMaskedAvro(t)
	r := b.do("POST", path("/v1/records/%d/replay", id), operatorToken,
		map[string]any{"value_json": map[string]any{"card": map[string]any{"number": card}, "name": "Anna"}})
	require.Equal(t, http.StatusAccepted, r.status, string(r.body))
	var job api.Job
	r.decode(t, &job)
	stored, err := b.store.GetJob(context.Background(), job.ID)
	require.NoError(t, err)
	require.True(t, stored.Edit.ValueSet)
	reg, err := schemas.New(schemas.Config{URL: url}, nil)
	require.NoError(t, err)
	t.Cleanup(reg.Close)
	got := reg.Decode(stored.Edit.Value)
	require.Equal(t, schemaID, got.SchemaID)
	require.JSONEq(t, `{"card":{"number":"`+clearCard+`"},"name":"Anna"}`, string(got.JSON))

	r = b.do("POST", path("/v1/records/%d/replay", id), operatorToken,
		map[string]any{"value_json": map[string]any{"card": map[string]any{"number": "[masked:0123456789abcdef]"}, "name": "Anna"}})
	require.Equal(t, http.StatusBadRequest, r.status, string(r.body))
	hasField(t, r, "value_json")
}

// A masked field whose placeholder does not fit its type (a number) cannot be re-encoded:
// the bytes are withheld rather than shown in clear, and the decoded value says so.
func TestDecodedMaskedBytesWithheld(t *testing.T) {
	t.Parallel()
	const numbered = `{"type":"record","name":"Order","namespace":"shop","fields":[
 {"name":"card","type":{"type":"record","name":"Card","fields":[{"name":"number","type":"long"}]}}]}`
	sr := schematest.Connect(t)
	schemaID, _ := sr.Register(t, "AVRO", numbered)
	m := testMasker(t)
	b := setupWith(t, storetest.New(t), withSchemas(t, sr.URL), func(c *api.Config) { c.Masking = m })
	const number = int64(4111111111111111)
	data, err := avro.Marshal(avro.MustParse(numbered), map[string]any{"card": map[string]any{"number": number}})
	require.NoError(t, err)
	raw := schematest.Wire(schemaID, data)
	id := b.park("orders", 1, func(_ int, r *store.NewRecord) { r.Value = raw })[0]

	r := b.do("GET", path("/v1/records/%d", id), viewerToken, nil)
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	var d api.RecordDetail
	r.decode(t, &d)
	require.Empty(t, d.Value.Base64, "the bytes hold the number in clear")
	require.Nil(t, d.Value.UTF8)
	require.JSONEq(t, `{"card":{"number":"`+m.Placeholder([]byte("4111111111111111"))+`"}}`, string(d.ValueDecoded.JSON))
	require.Contains(t, d.ValueDecoded.Error, "withheld")

	r = b.do("GET", path("/v1/records/%d?unmask=true", id), adminToken, nil)
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	r.decode(t, &d)
	require.Equal(t, base64.StdEncoding.EncodeToString(raw), d.Value.Base64, "in clear for an unmasking admin")
}
