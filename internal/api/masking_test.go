package api_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/api"
	"github.com/dlqops/dlq/internal/auth"
	"github.com/dlqops/dlq/internal/masking"
	"github.com/dlqops/dlq/internal/store"
	"github.com/dlqops/dlq/internal/store/storetest"
)

// The clear values the masking rules of setupMasked hide.
const (
	clearCard  = "4111111111111111"
	clearToken = "Bearer s3cr3t-downstream"
)

// testMasker masks the card number of JSON values and the authorization header.
func testMasker(t *testing.T) *masking.Masker {
	t.Helper()
	key := filepath.Join(t.TempDir(), "mask.key")
	require.NoError(t, os.WriteFile(key, []byte(strings.Repeat("k", 32)), 0o600))
	m, err := masking.New(masking.Config{JSONPaths: []string{"card.number"}, Headers: []string{"Authorization"}, HashKeyFile: key})
	require.NoError(t, err)
	return m
}

// setupMasked serves the API with testMasker and parks one such record of orders and one
// of payments.
func setupMasked(t *testing.T) (b *bundle, m *masking.Masker, orders, payments int64) {
	t.Helper()
	m = testMasker(t)
	b = setupWith(t, storetest.New(t), func(c *api.Config) { c.Masking = m })
	withSecrets := func(_ int, r *store.NewRecord) {
		r.Value = []byte(`{"card": {"number": "` + clearCard + `"}, "name": "Ann"}`)
		r.Headers = append(r.Headers, store.Header{Key: "authorization", Value: []byte(clearToken)})
	}
	return b, m, b.park("orders", 1, withSecrets)[0], b.park("payments", 1, withSecrets)[0]
}

// TestMaskingByRoleAndScope: every token sees the configured fields masked; only a token
// with the unmask permission for the record's topic reads them in clear, and only by
// asking, which writes an audit row before the answer leaves.
func TestMaskingByRoleAndScope(t *testing.T) {
	t.Parallel()
	b, m, orders, payments := setupMasked(t)
	card, token := m.Placeholder([]byte(clearCard)), m.Placeholder([]byte(clearToken))
	maskedView := func(r response) {
		t.Helper()
		require.Equal(t, http.StatusOK, r.status, string(r.body))
		require.NotContains(t, string(r.body), clearCard)
		require.NotContains(t, string(r.body), "s3cr3t")
		var d api.RecordDetail
		r.decode(t, &d)
		require.Equal(t, `{"card": {"number": "`+card+`"}, "name": "Ann"}`, *d.Value.UTF8)
		require.Equal(t, token, *d.Headers[len(d.Headers)-1].Value.UTF8)
	}
	clearView := func(r response) {
		t.Helper()
		require.Equal(t, http.StatusOK, r.status, string(r.body))
		var d api.RecordDetail
		r.decode(t, &d)
		require.Contains(t, *d.Value.UTF8, clearCard)
		require.Equal(t, clearToken, *d.Headers[len(d.Headers)-1].Value.UTF8)
	}
	for _, tok := range []string{viewerToken, operatorToken, adminToken, scopedToken} {
		maskedView(b.do("GET", path("/v1/records/%d", orders), tok, nil))
		maskedView(b.do("GET", path("/v1/records/%d?unmask=false", orders), tok, nil))
	}
	for _, tok := range []string{viewerToken, operatorToken, adminToken} {
		maskedView(b.do("GET", path("/v1/records/%d", payments), tok, nil))
	}

	// unmask: admins by default, within their topics; viewers and operators never.
	for _, tok := range []string{viewerToken, operatorToken} {
		r := b.do("GET", path("/v1/records/%d?unmask=true", orders), tok, nil)
		require.Equal(t, http.StatusForbidden, r.status, string(r.body))
		require.NotContains(t, string(r.body), clearCard)
	}
	clearView(b.do("GET", path("/v1/records/%d?unmask=true", orders), adminToken, nil))
	clearView(b.do("GET", path("/v1/records/%d?unmask=true", orders), scopedToken, nil))
	r := b.do("GET", path("/v1/records/%d?unmask=true", payments), scopedToken, nil)
	require.Equal(t, http.StatusNotFound, r.status, "outside its topics the record does not exist for the token")
	hasField(t, b.do("GET", path("/v1/records/%d?unmask=yes", orders), adminToken, nil), "unmask")

	entries, err := b.store.SearchAudit(context.Background(), store.AuditFilter{Action: "unmask_record"}, 0, 10)
	require.NoError(t, err)
	require.Len(t, entries, 2, "each unmask is audited")
	require.ElementsMatch(t, []string{"ada", "sam"}, []string{entries[0].Actor, entries[1].Actor})
	for _, e := range entries {
		require.Equal(t, []int64{orders}, e.RecordIDs)
		require.Equal(t, "ok", e.Outcome)
	}
	refused, err := b.store.SearchAudit(context.Background(), store.AuditFilter{Actor: "vera", RecordID: orders}, 0, 10)
	require.NoError(t, err)
	require.NotEmpty(t, refused, "a refused unmask is audited as a refusal")
}

// TestEditOfMaskedRecord: an editor without unmask edits the masked view; the fields it
// left as placeholders are replayed with their stored clear values, and a placeholder
// that is not one of the record's is refused rather than sent as text.
func TestEditOfMaskedRecord(t *testing.T) {
	t.Parallel()
	b, m, orders, _ := setupMasked(t)
	card, token := m.Placeholder([]byte(clearCard)), m.Placeholder([]byte(clearToken))
	edited := `{"card": {"number": "` + card + `"}, "name": "Anna"}`
	hs := []api.Header{{Key: "authorization", Value: api.Bytes{UTF8: &token}}, {Key: "fixed-by", Value: api.Bytes{UTF8: ptr("otto")}}}
	r := b.do("POST", path("/v1/records/%d/replay", orders), operatorToken, api.ReplayRequest{Value: &api.Bytes{UTF8: &edited}, Headers: &hs})
	require.Equal(t, http.StatusAccepted, r.status, string(r.body))
	var job api.Job
	r.decode(t, &job)
	stored, err := b.store.GetJob(context.Background(), job.ID)
	require.NoError(t, err)
	require.Equal(t, `{"card": {"number": "`+clearCard+`"}, "name": "Anna"}`, string(stored.Edit.Value), "the replay sends the stored card number")
	require.Equal(t, clearToken, string(stored.Edit.Headers[0].Value))

	foreign := `{"card": {"number": "` + m.Placeholder([]byte("5500000000000004")) + `"}}`
	ids := b.park("shipments", 1, func(_ int, r *store.NewRecord) { r.Value = []byte(`{"card": {"number": "1"}}`) })
	r = b.do("POST", path("/v1/records/%d/replay", ids[0]), operatorToken, api.ReplayRequest{Value: &api.Bytes{UTF8: &foreign}})
	hasField(t, r, "value")
	require.Contains(t, r.problem(t).Detail, "stands for none of this record's masked values")
}

func ptr[T any](v T) *T { return &v }

// TestSearchByMaskedValue: a masked field is found by exact match on its clear value or on
// the hash its placeholder shows, within the token's topics, among values that are not
// JSON and records without the field; what is not a masked field is refused.
func TestSearchByMaskedValue(t *testing.T) {
	t.Parallel()
	b, m, orders, payments := setupMasked(t)
	other := b.park("shipments", 3, func(i int, r *store.NewRecord) {
		r.Value = [][]byte{[]byte(`{"card": {"number": "5500000000000004"}}`), []byte("not json " + clearCard), {0xff, 0xfe}}[i]
	})
	search := func(tok, query string) []int64 {
		t.Helper()
		r := b.do("GET", "/v1/records?"+query, tok, nil)
		require.Equal(t, http.StatusOK, r.status, string(r.body))
		var page api.RecordPage
		r.decode(t, &page)
		var ids []int64
		for _, rec := range page.Records {
			ids = append(ids, rec.ID)
		}
		return ids
	}
	require.ElementsMatch(t, []int64{orders, payments}, search(viewerToken, "masked_field=card.number&masked_value="+clearCard))
	require.ElementsMatch(t, []int64{orders, payments}, search(viewerToken, "masked_field=$.card.number&masked_hash="+m.Hash([]byte(clearCard))))
	require.ElementsMatch(t, []int64{orders}, search(scopedToken, "masked_field=card.number&masked_value="+clearCard), "within the token's topics")
	require.ElementsMatch(t, []int64{other[0]}, search(viewerToken, "masked_field=card.number&masked_value=5500000000000004"))
	require.Empty(t, search(viewerToken, "masked_field=card.number&masked_value=4111"))
	require.ElementsMatch(t, []int64{orders, payments}, search(operatorToken, "masked_field=header:AUTHORIZATION&masked_value="+url.QueryEscape(clearToken)))
	require.ElementsMatch(t, []int64{orders}, search(viewerToken, "original_topic=orders&masked_field=header:authorization&masked_hash="+m.Hash([]byte(clearToken))))

	for q, field := range map[string]string{
		"masked_field=name&masked_value=Ann":                       "masked_field",
		"masked_field=header:trace&masked_value=x":                 "masked_field",
		"masked_value=" + clearCard:                                "masked_field",
		"masked_field=card.number":                                 "masked_value",
		"masked_field=card.number&masked_value=1&masked_hash=ab":   "masked_value",
		"masked_field=card.number&masked_hash=" + clearCard + "zz": "masked_hash",
	} {
		hasField(t, b.do("GET", "/v1/records?"+q, viewerToken, nil), field)
	}
}

// TestEditInHistory: the audit row of a replay with edits carries what it sent, masked as
// the record's payload is, to every token that sees the record's topic and to no other.
func TestEditInHistory(t *testing.T) {
	t.Parallel()
	b, m, orders, payments := setupMasked(t)
	card, token := m.Placeholder([]byte(clearCard)), m.Placeholder([]byte(clearToken))
	for _, id := range []int64{orders, payments} {
		edited := `{"card": {"number": "` + card + `"}, "name": "Anna"}`
		hs := []api.Header{{Key: "authorization", Value: api.Bytes{UTF8: &token}}, {Key: "fixed-by", Value: api.Bytes{UTF8: ptr("otto")}}}
		r := b.do("POST", path("/v1/records/%d/replay", id), operatorToken, api.ReplayRequest{Value: &api.Bytes{UTF8: &edited}, Headers: &hs})
		require.Equal(t, http.StatusAccepted, r.status, string(r.body))
	}
	history := func(tok string, id int64) []api.AuditEntry {
		t.Helper()
		r := b.do("GET", path("/v1/audit?record_id=%d&action=create_replay_job", id), tok, nil)
		require.Equal(t, http.StatusOK, r.status, string(r.body))
		require.NotContains(t, string(r.body), clearCard)
		require.NotContains(t, string(r.body), "s3cr3t")
		var l api.AuditList
		r.decode(t, &l)
		return l.Entries
	}
	for _, tok := range []string{viewerToken, operatorToken, adminToken, scopedToken} {
		entries := history(tok, orders)
		require.Len(t, entries, 1)
		e := entries[0].Edit
		require.NotNil(t, e, "the history entry carries the edit")
		require.Equal(t, `{"card": {"number": "`+card+`"}, "name": "Anna"}`, *e.Value.UTF8)
		require.Equal(t, []api.Header{{Key: "authorization", Value: api.Bytes{Base64: b64(token), UTF8: &token}},
			{Key: "fixed-by", Value: api.Bytes{Base64: b64("otto"), UTF8: ptr("otto")}}}, *e.Headers)
	}
	require.Empty(t, history(scopedToken, payments), "outside the token's topics")
	require.Len(t, history(viewerToken, payments), 1)

	// Without masking rules the edit reads as sent.
	plain := setup(t)
	id := plain.park("orders", 1)[0]
	v := `{"n":42}`
	r := plain.do("POST", path("/v1/records/%d/replay", id), operatorToken, api.ReplayRequest{Value: &api.Bytes{UTF8: &v}})
	require.Equal(t, http.StatusAccepted, r.status, string(r.body))
	r = plain.do("GET", path("/v1/audit?record_id=%d", id), viewerToken, nil)
	var l api.AuditList
	r.decode(t, &l)
	require.Equal(t, v, *l.Entries[0].Edit.Value.UTF8)
	require.Nil(t, l.Entries[0].Edit.Headers, "headers not edited: the stored ones were sent")
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

// TestExportIsMasked: an export line is the record's masked answer for every token, an
// admin's included: unmasking is one audited record at a time, never a whole export.
func TestExportIsMasked(t *testing.T) {
	t.Parallel()
	b, m, orders, _ := setupMasked(t)
	card, token := m.Placeholder([]byte(clearCard)), m.Placeholder([]byte(clearToken))
	for _, tok := range []string{viewerToken, operatorToken, adminToken, scopedToken} {
		r := b.do("GET", "/v1/records/export?original_topic=orders", tok, nil)
		require.Equal(t, http.StatusOK, r.status, string(r.body))
		require.NotContains(t, string(r.body), clearCard)
		require.NotContains(t, string(r.body), "s3cr3t")
		var d api.RecordDetail
		require.NoError(t, json.Unmarshal(bytes.TrimSpace(r.body), &d))
		require.Equal(t, orders, d.Record.ID)
		require.Equal(t, `{"card": {"number": "`+card+`"}, "name": "Ann"}`, *d.Value.UTF8)
		require.Equal(t, token, *d.Headers[len(d.Headers)-1].Value.UTF8)
	}
}

// TestContentSearchKeepsMaskedValues: a search by content over masked values would read
// them back one guess at a time, so without unmask it is refused on the listing, the
// incidents, the export and a bulk filter, naming the field; a token with unmask searches,
// and a header that is not masked stays searchable by everyone.
func TestContentSearchKeepsMaskedValues(t *testing.T) {
	t.Parallel()
	b, m, orders, _ := setupMasked(t)
	forbidden := func(r response, field string) {
		t.Helper()
		require.Equal(t, http.StatusForbidden, r.status, string(r.body))
		require.Equal(t, field, r.problem(t).Field)
		require.NotContains(t, string(r.body), clearCard)
	}
	guess := url.Values{"value_contains": {"4111"}}.Encode()
	for _, tok := range []string{viewerToken, operatorToken} {
		for _, listing := range []string{"/v1/records", "/v1/incidents", "/v1/records/export"} {
			forbidden(b.do("GET", listing+"?"+guess, tok, nil), "value_contains")
		}
		forbidden(b.do("GET", "/v1/records?header=Authorization&header_value_contains=s3cr", tok, nil), "header_value_contains")
	}

	// An admin whose token withholds unmask runs bulk jobs, not guesses.
	const maskedAdmin = "admin-no-unmask-Qm3cVd81kLp0ZtYx"
	a, err := auth.New(append(slices.Clone(tokens), auth.Token{Name: "nora", SHA256: auth.Hash(maskedAdmin), Role: auth.Admin,
		Unmask: ptr(false)}))
	require.NoError(t, err)
	nb := setupWith(t, b.store, func(c *api.Config) { c.Masking = m; c.Auth = a })
	forbidden(nb.do("POST", "/v1/bulk/discard", maskedAdmin, api.BulkRequest{DryRun: true, Reason: "guess",
		Filter: &api.Filter{ValueContains: ptr("4111")}}), "value_contains")
	forbidden(nb.do("GET", "/v1/records?"+guess, maskedAdmin, nil), "value_contains")

	found := func(tok, q string) []int64 {
		t.Helper()
		r := b.do("GET", "/v1/records?"+q, tok, nil)
		require.Equal(t, http.StatusOK, r.status, string(r.body))
		var page api.RecordPage
		r.decode(t, &page)
		var ids []int64
		for _, rec := range page.Records {
			ids = append(ids, rec.ID)
		}
		return ids
	}
	require.Contains(t, found(adminToken, guess), orders, "a token with unmask searches the clear bytes")
	require.Equal(t, []int64{orders}, found(scopedToken, guess), "within its topics")
	require.Contains(t, found(viewerToken, "header=originalTopic&header_value_contains=ord"), orders,
		"a header that is not masked is searched by anyone")
}
