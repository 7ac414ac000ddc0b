package api_test

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/api"
	"github.com/dlqops/dlq/internal/store"
)

// pointerOnly makes a parked record what the worker stores for a share group's dead
// letter whose source record was gone: source_unavailable, key and value null, the
// broker's pointer headers.
func pointerOnly(_ int, r *store.NewRecord) {
	r.Key, r.Value = nil, nil
	r.Reason = store.ReasonSourceUnavailable
	r.Headers = []store.Header{{Key: "__dlq.errors.topic", Value: []byte("orders")}, {Key: "__dlq.errors.partition", Value: []byte("0")},
		{Key: "__dlq.errors.offset", Value: []byte("7")}}
	r.ErrorMessage = "source unavailable: topic orders does not exist; Offset rejected by client. (share group g, delivery count 1)"
}

// A record without payload (a share group's dead letter whose source was gone) is never
// replayed as the empty record it is: a single replay is refused with 422 no-payload
// saying why, unless it gives a value; a bulk replay selecting any is refused, and its dry
// run counts them apart. A source_unavailable record that kept the group's copy, and a
// record of another reason with null key and value, replay as usual. Each refusal is
// audited with its own outcome.
func TestReplayOfARecordWithoutPayloadIsRefused(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ids := b.park("orders", 5, func(i int, r *store.NewRecord) {
		switch i {
		case 0, 1, 2:
			pointerOnly(i, r)
		case 3:
			pointerOnly(i, r)
			r.Value = []byte("the group's copy")
		case 4:
			r.Key, r.Value = nil, nil
		}
	})
	none, copied, tombstone := ids[:3], ids[3:4], ids[4:]

	filter := &api.Filter{OriginalTopic: "orders"}
	var dry api.DryRun
	r := b.do("POST", "/v1/bulk/replay", adminToken, api.BulkRequest{Filter: filter, DryRun: true})
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	r.decode(t, &dry)
	require.Equal(t, api.DryRun{Count: 5, NoPayload: 3}, dry, "three of the five have no payload")
	n := dry.Count
	r = b.do("POST", "/v1/bulk/replay", adminToken, api.BulkRequest{Filter: filter, ConfirmCount: &n})
	require.Equal(t, http.StatusUnprocessableEntity, r.status, "%s", r.body)
	p := r.problem(t)
	require.Equal(t, "urn:dlq:problem:no-payload", p.Type)
	require.Contains(t, p.Detail, "3 of the 5 selected records have no payload")
	require.EqualValues(t, 3, *p.NoPayload)
	one := int64(1)
	r = b.do("POST", "/v1/bulk/replay", adminToken, api.BulkRequest{IDs: []int64{none[2]}, ConfirmCount: &one})
	require.Equal(t, http.StatusUnprocessableEntity, r.status, "by ids too: %s", r.body)

	r = b.do("POST", "/v1/bulk/discard", adminToken, api.BulkRequest{Filter: filter, DryRun: true, Reason: "gone"})
	r.decode(t, &dry)
	require.Equal(t, api.DryRun{Count: 5}, dry, "a discard has nothing to refuse")

	r = b.do("POST", path("/v1/records/%d/replay", none[0]), operatorToken, nil)
	require.Equal(t, http.StatusUnprocessableEntity, r.status, "%s", r.body)
	p = r.problem(t)
	require.Equal(t, "urn:dlq:problem:no-payload", p.Type)
	require.Equal(t, "value", p.Field)
	require.Contains(t, p.Detail, "the record has no payload: its source record was gone")
	require.Contains(t, p.Detail, "a replay would produce a record that never existed")
	require.EqualValues(t, 1, *p.NoPayload)
	r = b.do("POST", path("/v1/records/%d/replay", none[0]), operatorToken,
		api.ReplayRequest{Headers: &[]api.Header{{Key: "k", Value: api.Bytes{Base64: "AA=="}}}})
	require.Equal(t, http.StatusUnprocessableEntity, r.status, "headers alone are not a payload")

	value := "the record, rebuilt by the operator"
	r = b.do("POST", path("/v1/records/%d/replay", none[1]), operatorToken, api.ReplayRequest{Value: &api.Bytes{UTF8: &value}})
	require.Equal(t, http.StatusAccepted, r.status, "a replay that gives the value: %s", r.body)
	for _, id := range []int64{copied[0], tombstone[0]} {
		r = b.do("POST", path("/v1/records/%d/replay", id), operatorToken, nil)
		require.Equal(t, http.StatusAccepted, r.status, "record %d has a payload: %s", id, r.body)
	}

	var audit api.AuditList
	b.do("GET", "/v1/audit?"+url.Values{"limit": {"100"}}.Encode(), viewerToken, nil).decode(t, &audit)
	var refused []string
	for _, e := range audit.Entries {
		if e.Outcome == "no_payload" {
			refused = append(refused, e.Actor+" "+e.Action)
		}
	}
	require.ElementsMatch(t, []string{"otto POST /v1/records/{id}/replay", "otto POST /v1/records/{id}/replay",
		"ada POST /v1/bulk/replay", "ada POST /v1/bulk/replay"}, refused)
}
