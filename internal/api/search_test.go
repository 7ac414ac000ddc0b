package api_test

import (
	"context"
	"encoding/base64"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/api"
	"github.com/dlqops/dlq/internal/store"
	"github.com/dlqops/dlq/internal/store/storetest"
)

// Records are found by what their value, key or a header holds: byte for byte and case-
// sensitively, binary values included, within the token's topics, in the listing, the
// incidents and a bulk job's filter alike.
func TestSearchByContent(t *testing.T) {
	t.Parallel()
	b := setup(t)
	values := [][]byte{
		[]byte(`{"order":"A-123","note":"100%_done"}`),
		append([]byte{0x00, 0xff, 0xfe}, "A-123"...), // binary, with the text inside
		[]byte(`{"order":"a-123"}`),
		nil, // a tombstone
	}
	ids := b.park("orders", len(values), func(i int, r *store.NewRecord) {
		r.Value = values[i]
		r.Key = []byte{byte('k'), 0x00, byte('0' + i)}
		if i == 1 {
			r.Headers = append(r.Headers, store.Header{Key: "tenant", Value: []byte("acme-eu")})
		}
	})
	other := b.park("payments", 1, func(_ int, r *store.NewRecord) { r.Value = []byte(`{"order":"A-123"}`) })

	find := func(token string, q url.Values) []int64 {
		t.Helper()
		r := b.do("GET", "/v1/records?"+q.Encode(), token, nil)
		require.Equal(t, http.StatusOK, r.status, "%s: %s", q.Encode(), r.body)
		var page api.RecordPage
		r.decode(t, &page)
		var got []int64
		for _, rec := range page.Records {
			got = append(got, rec.ID)
		}
		slices.Sort(got)
		require.EqualValues(t, len(got), page.Total)
		return got
	}
	q := func(kv ...string) url.Values {
		v := url.Values{}
		for i := 0; i < len(kv); i += 2 {
			v.Set(kv[i], kv[i+1])
		}
		return v
	}
	require.Equal(t, []int64{ids[0], ids[1], other[0]}, find(viewerToken, q("value_contains", "A-123")), "text and binary values")
	require.Equal(t, []int64{ids[0], ids[1]}, find(scopedToken, q("value_contains", "A-123")), "the token's topics only")
	require.Equal(t, []int64{ids[2]}, find(viewerToken, q("value_contains", "a-123")), "case-sensitive")
	require.Equal(t, []int64{ids[0]}, find(viewerToken, q("value_contains", "100%_")), "% and _ are plain characters")
	require.Empty(t, find(viewerToken, q("value_contains", "100%x")))
	require.Equal(t, []int64{ids[1]}, find(viewerToken, q("value_contains_b64", base64.StdEncoding.EncodeToString([]byte{0xff, 0xfe}))), "bytes that are not text")
	require.Equal(t, []int64{ids[2]}, find(viewerToken, q("key_contains", "2")))
	require.Equal(t, []int64{ids[1]}, find(viewerToken, q("header", "tenant")))
	require.Equal(t, []int64{ids[1]}, find(viewerToken, q("header", "tenant", "header_value_contains", "-eu")))
	require.Empty(t, find(viewerToken, q("header", "tenant", "header_value_contains", "-us")))
	require.Empty(t, find(viewerToken, q("header", "trace", "header_value_contains", "eu")), "the named header only")
	require.Equal(t, []int64{ids[0], ids[1]}, find(viewerToken, q("value_contains", "A-123", "original_topic", "orders", "status", "parked")),
		"with the other filters")

	r := b.do("GET", "/v1/incidents?value_contains=A-123", viewerToken, nil)
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	var incs api.IncidentList
	r.decode(t, &incs)
	var inIncidents int64
	for _, in := range incs.Incidents {
		inIncidents += in.Parked
	}
	require.EqualValues(t, 3, inIncidents)

	text := "A-123"
	r = b.do("POST", "/v1/bulk/discard", adminToken, api.BulkRequest{Filter: &api.Filter{ValueContains: &text}, DryRun: true, Reason: "search"})
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	var dry api.DryRun
	r.decode(t, &dry)
	require.EqualValues(t, 3, dry.Count)

	for query, field := range map[string]string{
		"header_value_contains=eu":                    "header_value_contains",
		"value_contains=" + strings.Repeat("x", 1025): "value_contains",
		"value_contains=a&value_contains_b64=YQ==":    "value_contains_b64",
		"value_contains_b64=%25%25":                   "value_contains_b64",
		"key_contains=":                               "key_contains",
	} {
		r := b.do("GET", "/v1/records?"+query, viewerToken, nil)
		require.Equal(t, http.StatusBadRequest, r.status, query)
		hasField(t, r, field)
	}
	r = b.do("POST", "/v1/bulk/replay", adminToken, api.BulkRequest{Filter: &api.Filter{HeaderValueContains: &text}, DryRun: true})
	require.Equal(t, http.StatusBadRequest, r.status)
	hasField(t, r, "filter.header_value_contains")
}

// A content search is bounded by the statement timeout as every listing is: past it the
// answer is a 503 that says so, never a connection held. A lock held by the test makes the
// search wait, so the timeout fires however fast the machine is.
func TestSearchByContentTimesOut(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, dbURL := storetest.NewWithURL(t)
	sep := "?"
	if strings.Contains(dbURL, "?") {
		sep = "&"
	}
	slow, err := store.Open(ctx, dbURL+sep+"statement_timeout=200")
	require.NoError(t, err)
	t.Cleanup(slow.Close)
	b := setupWith(t, slow)
	b.park("orders", 1)

	conn, err := pgx.Connect(ctx, dbURL)
	require.NoError(t, err)
	defer conn.Close(ctx)
	tx, err := conn.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	_, err = tx.Exec(ctx, "LOCK TABLE dead_letters IN ACCESS EXCLUSIVE MODE")
	require.NoError(t, err)

	r := b.do("GET", "/v1/records?value_contains=n", viewerToken, nil)
	require.Equal(t, http.StatusServiceUnavailable, r.status, "%s", r.body)
	require.Contains(t, r.problem(t).Detail, "statement timeout")
	require.NoError(t, tx.Rollback(ctx))
	r = b.do("GET", "/v1/records?value_contains=n", viewerToken, nil)
	require.Equal(t, http.StatusOK, r.status)
	var page api.RecordPage
	r.decode(t, &page)
	require.Len(t, page.Records, 1)
}
