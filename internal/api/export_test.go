package api_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/api"
	"github.com/dlqops/dlq/internal/store"
)

// The export streams every record the filters select, within the token's topics, each line
// exactly what GET /v1/records/{id} answers, across many pages; it is audited with its
// filter and count; a bad filter is refused before anything is streamed.
func TestExportRecords(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const n = 137 // several export pages, the last one partial
	ids := b.park("orders", n, func(i int, r *store.NewRecord) {
		if i%3 == 0 {
			r.Value = []byte{0xff, 0x00, byte(i)} // binary
		}
	})
	b.park("payments", 5)

	export := func(token, q string) []api.RecordDetail {
		t.Helper()
		r := b.do("GET", "/v1/records/export?"+q, token, nil)
		require.Equal(t, http.StatusOK, r.status, string(r.body))
		require.Equal(t, "application/x-ndjson", r.header.Get("Content-Type"))
		var out []api.RecordDetail
		sc := bufio.NewScanner(bytes.NewReader(r.body))
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
			dec.DisallowUnknownFields()
			var d api.RecordDetail
			require.NoError(t, dec.Decode(&d), sc.Text())
			out = append(out, d)
		}
		require.NoError(t, sc.Err())
		return out
	}
	got := export(scopedToken, "")
	require.Len(t, got, n, "the scoped token's topic only, every page")
	for i, d := range got {
		require.Equal(t, ids[i], d.Record.ID, "oldest first")
	}
	for _, i := range []int{0, 1, n - 1} {
		r := b.do("GET", path("/v1/records/%d", ids[i]), scopedToken, nil)
		require.Equal(t, http.StatusOK, r.status)
		line, err := json.Marshal(got[i])
		require.NoError(t, err)
		require.JSONEq(t, string(r.body), string(line), "a line is the record's own answer")
	}
	require.Len(t, export(viewerToken, ""), n+5)
	require.Len(t, export(viewerToken, "original_topic=payments"), 5)
	require.Empty(t, export(viewerToken, "reason=unroutable"))

	r := b.do("GET", "/v1/audit?action=export_records", adminToken, nil)
	var audit api.AuditList
	r.decode(t, &audit)
	require.Len(t, audit.Entries, 4)
	newest := audit.Entries[0]
	require.Equal(t, "vera", newest.Actor)
	require.EqualValues(t, 0, newest.Affected)
	require.NotNil(t, newest.Filter)
	require.Equal(t, []store.Reason{store.ReasonUnroutable}, newest.Filter.Reasons)
	require.EqualValues(t, n, audit.Entries[3].Affected)
	require.Equal(t, []string{"orders"}, audit.Entries[3].Filter.OriginalTopics, "the scope it ran under")

	r = b.do("GET", "/v1/records/export?reason=exhaust", viewerToken, nil)
	require.Equal(t, http.StatusBadRequest, r.status)
	hasField(t, r, "reason")
	r = b.do("GET", "/v1/records/export?limit=5", viewerToken, nil)
	require.Equal(t, http.StatusBadRequest, r.status)
	hasField(t, r, "limit")
	r = b.do("GET", "/v1/records/export", "", nil)
	require.Equal(t, http.StatusUnauthorized, r.status)
}
