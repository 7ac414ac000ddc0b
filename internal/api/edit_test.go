package api_test

import (
	"context"
	"encoding/base64"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/api"
	"github.com/dlqops/dlq/internal/store"
)

// TestReplayWithEdit: a replay may carry a new value and headers; the job keeps them, the
// record keeps its own, and the job's audit row says what changed.
func TestReplayWithEdit(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ids := b.park("orders", 2)
	hs := []api.Header{{Key: "trace", Value: api.Bytes{Base64: base64.StdEncoding.EncodeToString([]byte{0xff, 0, 1})}},
		{Key: "fixed-by", Value: api.Bytes{Base64: base64.StdEncoding.EncodeToString([]byte("ops"))}}}
	r := b.do("POST", path("/v1/records/%d/replay", ids[0]), operatorToken, api.ReplayRequest{
		Value: &api.Bytes{Base64: base64.StdEncoding.EncodeToString([]byte(`{"n":1}`))}, Headers: &hs})
	require.Equal(t, http.StatusAccepted, r.status, string(r.body))
	var job api.Job
	r.decode(t, &job)

	ctx := context.Background()
	stored, err := b.store.GetJob(ctx, job.ID)
	require.NoError(t, err)
	require.Equal(t, &store.Edit{ValueSet: true, Value: []byte(`{"n":1}`), HeadersSet: true, Headers: []store.EditHeader{
		{Key: "trace", Value: []byte{0xff, 0, 1}}, {Key: "fixed-by", Value: []byte("ops")}}}, stored.Edit)
	rec, err := b.store.Get(ctx, ids[0])
	require.NoError(t, err)
	require.Equal(t, `{"n":0}`, string(rec.Value), "the record keeps its own value")

	entries, err := b.store.ListAudit(ctx, 0, 10)
	require.NoError(t, err)
	var reason string
	for _, e := range entries {
		if e.JobID == job.ID {
			reason = e.Reason
		}
	}
	require.Regexp(t, `^edited: value 7 bytes sha256:[0-9a-f]{12} -> 7 bytes sha256:[0-9a-f]{12}; `+
		`headers added \["fixed-by"\]; headers removed \["originalTopic" "retryCount"\]$`, reason)

	// Unchanged text is no change; a bad base64 names its field.
	same := "{\"n\":1}"
	r = b.do("POST", path("/v1/records/%d/replay", ids[1]), operatorToken, api.ReplayRequest{Value: &api.Bytes{UTF8: &same}})
	require.Equal(t, http.StatusAccepted, r.status, string(r.body))
	r.decode(t, &job)
	entries, err = b.store.ListAudit(ctx, 0, 10)
	require.NoError(t, err)
	for _, e := range entries {
		if e.JobID == job.ID {
			require.Equal(t, "edited: no change", e.Reason)
		}
	}
	r = b.do("POST", path("/v1/records/%d/replay", ids[1]), operatorToken, api.ReplayRequest{
		Value: &api.Bytes{Base64: "%%%"}})
	hasField(t, r, "value")
}
