package api_test

import (
	"context"
	"encoding/binary"
	"math/big"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/api"
	"github.com/dlqops/dlq/internal/schemas"
	"github.com/dlqops/dlq/internal/schemas/schematest"
	"github.com/dlqops/dlq/internal/store"
	"github.com/dlqops/dlq/internal/store/storetest"
	"github.com/dlqops/dlq/internal/testenv"
)

// value_schema_version encodes a value_json under another version of the subject of the
// record's value schema: what is sent carries that version's id and decodes to the edit; a
// version the subject does not have, or a value_schema_version without value_json, is
// refused naming value_schema_version.
func TestReplayValueJSONUnderChosenVersion(t *testing.T) {
	t.Parallel()
	sr := schematest.Connect(t)
	v1 := strings.Replace(paymentAvro, `"name":"Payment"`, `"name":"Payment","doc":"`+testenv.UniqueName("versioned ")+`"`, 1)
	v1ID, subject := sr.Register(t, "AVRO", v1)
	v2 := strings.Replace(v1, `"default":null}]}`, `"default":null},
 {"name":"channel","type":"string","default":"web"}]}`, 1)
	require.NotEqual(t, v1, v2)
	v2ID := sr.RegisterVersion(t, subject, "AVRO", v2)
	require.NotEqual(t, v1ID, v2ID)
	b := setupWith(t, storetest.New(t), withSchemas(t, sr.URL))
	ids := b.park("payments", 1, func(_ int, r *store.NewRecord) {
		r.Value = avroPayment(t, v1ID, payment{ID: "p1", Amount: big.NewRat(1050, 100)})
	})
	replay := func(body map[string]any) response {
		return b.do("POST", path("/v1/records/%d/replay", ids[0]), operatorToken, body)
	}

	r := replay(map[string]any{"value_json": map[string]any{"id": "p1", "amount": "10.50", "memo": nil, "channel": "pos"},
		"value_schema_version": 2})
	require.Equal(t, http.StatusAccepted, r.status, string(r.body))
	var job api.Job
	r.decode(t, &job)
	stored, err := b.store.GetJob(context.Background(), job.ID)
	require.NoError(t, err)
	sent := stored.Edit.Value
	require.Equal(t, byte(0), sent[0], "magic byte")
	require.Equal(t, uint32(v2ID), binary.BigEndian.Uint32(sent[1:5]), "the chosen version's schema id")
	reg, err := schemas.New(schemas.Config{URL: sr.URL}, nil)
	require.NoError(t, err)
	t.Cleanup(reg.Close)
	got := reg.Decode(sent)
	require.Equal(t, 2, got.Version)
	require.JSONEq(t, `{"id":"p1","amount":"10.50","memo":null,"channel":"pos"}`, string(got.JSON))

	r = replay(map[string]any{"value_json": map[string]any{"id": "p1", "amount": "10.50"}, "value_schema_version": 7})
	require.Equal(t, http.StatusUnprocessableEntity, r.status, string(r.body))
	require.Equal(t, "value_schema_version", r.problem(t).Field)

	r = replay(map[string]any{"value_json": map[string]any{"id": "p1", "amount": "10.50", "channel": 3}, "value_schema_version": 2})
	require.Equal(t, http.StatusUnprocessableEntity, r.status, string(r.body))
	require.Equal(t, "value_json.channel", r.problem(t).Field, "validated against the chosen version")

	hasField(t, replay(map[string]any{"value_schema_version": 2}), "value_schema_version")
}
