package api_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/api"
	"github.com/dlqops/dlq/internal/api/apitest"
	"github.com/dlqops/dlq/internal/auth"
	"github.com/dlqops/dlq/internal/store"
	"github.com/dlqops/dlq/internal/store/storetest"
)

// Every route the spec lists is served, and every served route is in the spec.
func TestSpecAndRoutesAgree(t *testing.T) {
	t.Parallel()
	doc := apitest.Spec(t)
	var inSpec []string
	for p, item := range doc.Paths.Map() {
		for m := range item.Operations() {
			inSpec = append(inSpec, m+" "+p)
		}
	}
	served := []string{"GET /healthz", "GET /readyz", "GET /metrics"} // internal/ops
	for _, rt := range setup(t).api.Routes() {
		served = append(served, rt.Method+" "+rt.Path)
	}
	sort.Strings(inSpec)
	sort.Strings(served)
	require.Equal(t, inSpec, served)
}

// The whole role × endpoint matrix: no token and a bad token get 401 everywhere, a role
// below the route's gets 403, the others get through authorization.
func TestRoleMatrix(t *testing.T) {
	t.Parallel()
	b := setup(t)
	callers := []struct {
		token string
		role  auth.Role
	}{{"", ""}, {"not-a-token", ""}, {viewerToken, auth.Viewer}, {operatorToken, auth.Operator}, {adminToken, auth.Admin}}
	bodies := map[string]any{
		"/v1/records/{id}/replay":  api.ReplayRequest{},
		"/v1/records/{id}/discard": api.DiscardRequest{Reason: "matrix"},
		"/v1/bulk/replay":          api.BulkRequest{IDs: []int64{1}, DryRun: true},
		"/v1/bulk/discard":         api.BulkRequest{IDs: []int64{1}, DryRun: true, Reason: "matrix"},
	}
	for _, rt := range b.api.Routes() {
		p := strings.NewReplacer("{id}", "999999", "{route}", "matrix-route").Replace(rt.Path)
		for _, c := range callers {
			t.Run(rt.Method+" "+rt.Path+" as "+string(c.role)+c.token[:min(len(c.token), 3)], func(t *testing.T) {
				var body any
				if bd, ok := bodies[rt.Path]; ok {
					body = bd
				}
				r := b.do(rt.Method, p, c.token, body)
				switch {
				case c.role == "":
					require.Equal(t, http.StatusUnauthorized, r.status)
					require.Equal(t, "urn:dlq:problem:unauthorized", r.problem(t).Type)
					require.NotEmpty(t, r.header.Get("WWW-Authenticate"))
				case !c.role.Allows(rt.Role):
					require.Equal(t, http.StatusForbidden, r.status)
					require.Equal(t, "urn:dlq:problem:forbidden", r.problem(t).Type)
				default:
					require.NotContains(t, []int{401, 403}, r.status, "%s", r.body)
					require.Less(t, r.status, 500, "%s", r.body)
				}
			})
		}
	}
}

func TestListFiltersAndCursor(t *testing.T) {
	t.Parallel()
	b := setup(t)
	orders := b.park("orders", 7)
	b.park("payments", 3, func(i int, r *store.NewRecord) { r.ErrorClass = "SQLException" })

	var page api.RecordPage
	var seen []int64
	cursor := ""
	for {
		q := url.Values{"original_topic": {"orders"}, "limit": {"3"}, "status": {"parked"}}
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		r := b.do("GET", "/v1/records?"+q.Encode(), viewerToken, nil)
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
		page = api.RecordPage{}
		r.decode(t, &page)
		for _, rec := range page.Records {
			seen = append(seen, rec.ID)
			require.Equal(t, "orders", rec.Original.Topic)
		}
		if page.NextCursor == "" {
			break
		}
		cursor = page.NextCursor
	}
	sort.Slice(seen, func(i, j int) bool { return seen[i] < seen[j] })
	require.Equal(t, orders, seen)

	r := b.do("GET", "/v1/records?error_class=SQLException&key_b64="+url.QueryEscape(base64.StdEncoding.EncodeToString([]byte("key-1"))), viewerToken, nil)
	require.Equal(t, http.StatusOK, r.status)
	r.decode(t, &page)
	require.Len(t, page.Records, 1)
	require.Equal(t, "payments", page.Records[0].Original.Topic)
	require.Equal(t, 5, *page.Records[0].KeySize)

	// The scoped token sees orders only, whatever it asks for.
	r = b.do("GET", "/v1/records?limit=500", scopedToken, nil)
	r.decode(t, &page)
	require.Len(t, page.Records, 7)
	r = b.do("GET", "/v1/records?original_topic=payments", scopedToken, nil)
	r.decode(t, &page)
	require.Empty(t, page.Records)
}

// Bad input gets a 400 that names the field; SQL-shaped values are plain values.
func TestListRejects(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.park("orders", 2)
	for q, field := range map[string]string{
		"limit=1000000":           "limit",
		"limit=0":                 "limit",
		"limit=ten":               "limit",
		"colour=red":              "colour",
		"cursor=bm90LWEtY3Vyc29y": "cursor",
		"status=lost":             "status",
		"key_b64=%25%25":          "key_b64",
		"key=a&key_b64=YQ==":      "key_b64",
		"key=":                    "key",
		"stored_from=last+week":   "stored_from",
		"limit=1&limit=2":         "limit",
	} {
		r := b.do("GET", "/v1/records?"+q, viewerToken, nil)
		require.Equal(t, http.StatusBadRequest, r.status, q)
		hasField(t, r, field)
	}
	for _, evil := range []string{"' OR 1=1 --", "orders'; DROP TABLE dead_letters; --", `%_\`} {
		r := b.do("GET", "/v1/records?original_topic="+url.QueryEscape(evil)+"&error_contains="+url.QueryEscape(evil), viewerToken, nil)
		require.Equal(t, http.StatusOK, r.status)
		var page api.RecordPage
		r.decode(t, &page)
		require.Empty(t, page.Records)
	}
	r := b.do("GET", "/v1/records", viewerToken, nil)
	var page api.RecordPage
	r.decode(t, &page)
	require.Len(t, page.Records, 2, "the table is intact")
	r = b.do("GET", "/v1/nowhere", viewerToken, nil)
	require.Equal(t, http.StatusNotFound, r.status)
	r = b.do("DELETE", "/v1/records", adminToken, nil)
	require.Equal(t, http.StatusMethodNotAllowed, r.status)
	r.problem(t)
}

func TestGetRecordDetail(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ids := b.park("orders", 2, func(i int, r *store.NewRecord) {
		if i == 1 {
			r.Key, r.Value = nil, []byte{0xc3, 0x28}
			r.Headers = append(r.Headers, store.Header{Key: "null-header"})
		}
	})
	var d api.RecordDetail
	r := b.do("GET", path("/v1/records/%d", ids[0]), viewerToken, nil)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	r.decode(t, &d)
	require.Equal(t, "key-0", *d.Key.UTF8)
	require.Equal(t, base64.StdEncoding.EncodeToString([]byte(`{"n":0}`)), d.Value.Base64)
	require.Equal(t, base64.StdEncoding.EncodeToString([]byte{0xff, 0, 1}), d.Headers[0].Value.Base64)
	require.Nil(t, d.Headers[0].Value.UTF8, "invalid UTF-8 has no preview")
	require.Equal(t, 5, d.Envelope.RetryCount)
	require.Equal(t, "orders", d.Envelope.OriginalTopic)
	require.Equal(t, "plain", d.Envelope.Convention)

	r = b.do("GET", path("/v1/records/%d", ids[1]), viewerToken, nil)
	d = api.RecordDetail{}
	r.decode(t, &d)
	require.True(t, d.Key.Null)
	require.Nil(t, d.Record.KeySize)
	require.False(t, d.Value.Null)
	require.Nil(t, d.Value.UTF8)
	require.True(t, d.Headers[3].Value.Null)

	other := b.park("payments", 1)
	r = b.do("GET", path("/v1/records/%d", other[0]), scopedToken, nil)
	require.Equal(t, http.StatusNotFound, r.status, "outside the token's topics")
	r = b.do("GET", "/v1/records/123456789", viewerToken, nil)
	require.Equal(t, http.StatusNotFound, r.status)
	r = b.do("GET", "/v1/records/abc", viewerToken, nil)
	require.Equal(t, http.StatusBadRequest, r.status)
	hasField(t, r, "id")
}

func TestDiscardThenReplayConflicts(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ids := b.park("orders", 1)
	p := path("/v1/records/%d/discard", ids[0])
	r := b.do("POST", p, operatorToken, map[string]string{})
	require.Equal(t, http.StatusBadRequest, r.status)
	hasField(t, r, "reason")
	r = b.do("POST", p, operatorToken, map[string]string{"reason": "x", "extra": "y"})
	require.Equal(t, http.StatusBadRequest, r.status)
	require.Equal(t, "urn:dlq:problem:invalid-body", r.problem(t).Type)

	r = b.do("POST", p, operatorToken, api.DiscardRequest{Reason: "poison message, customer deleted"})
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	var rec api.Record
	r.decode(t, &rec)
	require.Equal(t, store.StatusDiscarded, rec.Status)
	require.Equal(t, "otto", rec.ChangedBy)

	r = b.do("POST", path("/v1/records/%d/replay", ids[0]), operatorToken, nil)
	require.Equal(t, http.StatusConflict, r.status, "replay after discard")
	r.problem(t)
	r = b.do("POST", p, operatorToken, api.DiscardRequest{Reason: "again"})
	require.Equal(t, http.StatusConflict, r.status)

	var audit api.AuditList
	b.do("GET", "/v1/audit?limit=10", viewerToken, nil).decode(t, &audit)
	var found bool
	for _, e := range audit.Entries {
		if e.Action == "discard" && e.Outcome == "ok" {
			found = true
			require.Equal(t, "otto", e.Actor)
			require.Equal(t, "poison message, customer deleted", e.Reason)
			require.NotEmpty(t, e.RequestID)
		}
	}
	require.True(t, found, "%+v", audit)
}

// Two concurrent replays of one record: exactly one is accepted.
func TestConcurrentReplays(t *testing.T) {
	t.Parallel()
	const n = 8
	// All at once from one token: the per-token limit must not refuse any of them first.
	b := setupWith(t, storetest.New(t), func(c *api.Config) { c.Limits.MaxConcurrent = n })
	ids := b.park("orders", 1)
	var wg sync.WaitGroup
	statuses := make([]int, n)
	for i := range n {
		wg.Go(func() {
			statuses[i] = b.do("POST", path("/v1/records/%d/replay", ids[0]), operatorToken, nil).status
		})
	}
	wg.Wait()
	sort.Ints(statuses)
	require.Equal(t, http.StatusAccepted, statuses[0])
	for _, s := range statuses[1:] {
		require.Equal(t, http.StatusConflict, s)
	}
	r := b.do("POST", path("/v1/records/%d/discard", ids[0]), operatorToken, api.DiscardRequest{Reason: "x"})
	require.Equal(t, http.StatusConflict, r.status, "a pending replay holds the record")
}

func TestReplayOptionsAndIdempotency(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ids := b.park("orders", 2)
	p := path("/v1/records/%d/replay", ids[0])
	r := b.do("POST", p, operatorToken, api.ReplayRequest{TargetTopic: "elsewhere"})
	require.Equal(t, http.StatusBadRequest, r.status)
	hasField(t, r, "target_topic")

	req := api.ReplayRequest{TargetTopic: "orders.replay", ResetRetry: true}
	r = b.do("POST", p, operatorToken, req, "Idempotency-Key", "k-1")
	require.Equal(t, http.StatusAccepted, r.status, "%s", r.body)
	var job api.Job
	r.decode(t, &job)
	require.Equal(t, []int64{ids[0]}, job.IDs)
	require.Equal(t, "orders.replay", job.TargetTopic)
	require.True(t, job.ResetRetry)
	require.Equal(t, store.JobPending, job.Status)

	r = b.do("POST", p, operatorToken, req, "Idempotency-Key", "k-1")
	require.Equal(t, http.StatusAccepted, r.status)
	require.Equal(t, "true", r.header.Get("Idempotent-Replayed"))
	var again api.Job
	r.decode(t, &again)
	require.Equal(t, job.ID, again.ID)

	r = b.do("POST", path("/v1/records/%d/replay", ids[1]), operatorToken, nil, "Idempotency-Key", "k-1")
	require.Equal(t, http.StatusConflict, r.status, "same key, another request")

	r = b.do("POST", path("/v1/jobs/%d/cancel", job.ID), operatorToken, nil)
	require.Equal(t, http.StatusOK, r.status)
	r.decode(t, &job)
	require.Equal(t, store.JobCancelled, job.Status)
	r = b.do("POST", path("/v1/jobs/%d/cancel", job.ID), operatorToken, nil)
	require.Equal(t, http.StatusConflict, r.status)
	r = b.do("POST", p, operatorToken, nil)
	require.Equal(t, http.StatusAccepted, r.status, "a cancelled job releases the record")
}

func TestBulkDryRunConfirmAndJobs(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.park("orders", 12)
	b.park("payments", 4)
	filter := &api.Filter{OriginalTopic: "orders"}

	r := b.do("POST", "/v1/bulk/replay", adminToken, api.BulkRequest{Filter: filter, DryRun: true})
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	var dry api.DryRun
	r.decode(t, &dry)
	require.EqualValues(t, 12, dry.Count)

	r = b.do("POST", "/v1/bulk/replay", adminToken, api.BulkRequest{Filter: filter})
	require.Equal(t, http.StatusBadRequest, r.status)
	hasField(t, r, "confirm_count")
	wrong := int64(11)
	r = b.do("POST", "/v1/bulk/replay", adminToken, api.BulkRequest{Filter: filter, ConfirmCount: &wrong})
	require.Equal(t, http.StatusConflict, r.status)
	p := r.problem(t)
	require.Equal(t, "urn:dlq:problem:count-mismatch", p.Type)
	require.EqualValues(t, 12, *p.Count)

	for _, bad := range []struct {
		req   api.BulkRequest
		field string
	}{
		{api.BulkRequest{DryRun: true}, "filter"},
		{api.BulkRequest{IDs: []int64{1}, Filter: filter, DryRun: true}, "filter"},
		{api.BulkRequest{Filter: &api.Filter{Statuses: []store.Status{store.StatusReplayed}}, DryRun: true}, "filter.statuses"},
		{api.BulkRequest{Filter: filter, DryRun: true, TargetTopic: "nope"}, "target_topic"},
		{api.BulkRequest{Filter: filter, DryRun: true, RatePerSecond: -1}, "rate_per_second"},
		{api.BulkRequest{IDs: make([]int64, 1001), DryRun: true}, "ids"},
	} {
		r = b.do("POST", "/v1/bulk/replay", adminToken, bad.req)
		require.Equal(t, http.StatusBadRequest, r.status, "%+v", bad.req)
		hasField(t, r, bad.field)
	}
	r = b.do("POST", "/v1/bulk/discard", adminToken, api.BulkRequest{Filter: filter, DryRun: true})
	hasField(t, r, "reason")

	n := int64(12)
	r = b.do("POST", "/v1/bulk/replay", adminToken, api.BulkRequest{Filter: filter, ConfirmCount: &n, RatePerSecond: 100, TargetTopic: "orders.replay"})
	require.Equal(t, http.StatusAccepted, r.status, "%s", r.body)
	var job api.Job
	r.decode(t, &job)
	require.EqualValues(t, 12, job.ConfirmedCount)
	require.Equal(t, 100, job.RatePerSecond)
	require.NotNil(t, job.Filter.StoredTo, "bounded to the records the count covered")

	four := int64(4)
	r = b.do("POST", "/v1/bulk/discard", scopedToken, api.BulkRequest{Filter: &api.Filter{}, ConfirmCount: &four, Reason: "scope"})
	require.Equal(t, http.StatusConflict, r.status, "the scoped token counts only orders (12), not 4")
	require.EqualValues(t, 12, *r.problem(t).Count)

	var list api.JobList
	b.do("GET", "/v1/jobs?limit=1", viewerToken, nil).decode(t, &list)
	require.Len(t, list.Jobs, 1)
	require.Equal(t, job.ID, list.NextBefore)
	var got api.Job
	b.do("GET", path("/v1/jobs/%d", job.ID), viewerToken, nil).decode(t, &got)
	require.Equal(t, job.ID, got.ID)
	require.Equal(t, http.StatusNotFound, b.do("GET", "/v1/jobs/987654", viewerToken, nil).status)
}

func TestRoutesRunsStats(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.park("orders", 3)
	require.NoError(t, b.store.RegisterRoutes(context.Background(), []string{"orders-route"}, "dlq-worker/w1"))
	r := b.do("POST", "/v1/routes/orders-route/pause", operatorToken, nil)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	var rc api.RouteControl
	r.decode(t, &rc)
	require.True(t, rc.Paused)
	b.do("POST", "/v1/routes/orders-route/run", operatorToken, nil).decode(t, &rc)
	require.NotNil(t, rc.RunRequestedAt)
	b.do("POST", "/v1/routes/orders-route/resume", operatorToken, nil).decode(t, &rc)
	require.False(t, rc.Paused)
	var routes api.RouteList
	b.do("GET", "/v1/routes", viewerToken, nil).decode(t, &routes)
	require.Len(t, routes.Routes, 1)
	require.Nil(t, routes.Routes[0].NextRunAt, "no worker reported it yet")
	next := time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)
	require.NoError(t, b.store.SetNextRun(context.Background(), "orders-route", "@every 1m", next))
	b.do("GET", "/v1/routes", viewerToken, nil).decode(t, &routes)
	require.Equal(t, next, *routes.Routes[0].NextRunAt, "the next run a worker reported")

	ctx := context.Background()
	run, err := b.store.BeginRun(ctx, "orders-route", "w1")
	require.NoError(t, err)
	require.NoError(t, b.store.RecordLedger(ctx, store.LedgerEntry{RunID: run.ID, Topic: "orders.dlq", From: 0, To: 5, Redriven: 5}))
	require.NoError(t, b.store.EndRun(ctx, store.RunEnd{ID: run.ID, Status: store.RunSucceeded}))
	var runs api.RunList
	r = b.do("GET", "/v1/runs?route=orders-route", viewerToken, nil)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	r.decode(t, &runs)
	require.Len(t, runs.Runs, 1)
	require.EqualValues(t, 5, runs.Runs[0].Ledger[0].Redriven)

	var st api.Stats
	b.do("GET", "/v1/stats", viewerToken, nil).decode(t, &st)
	require.Len(t, st.Counts, 1)
	require.EqualValues(t, 3, st.Counts[0].Count)
	require.NotNil(t, st.OldestParked)

	var audit api.AuditList
	b.do("GET", "/v1/audit", viewerToken, nil).decode(t, &audit)
	require.Equal(t, "resume_route", audit.Entries[0].Action)
	require.Equal(t, "otto", audit.Entries[0].Actor)
}

func TestRetryNow(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ids := b.park("orders", 2, func(i int, r *store.NewRecord) {
		if i == 0 {
			r.Status, r.Reason, r.DueAt = store.StatusScheduled, store.ReasonBackoff, time.Now().Add(time.Hour)
		}
	})
	r := b.do("POST", path("/v1/records/%d/retry-now", ids[0]), operatorToken, nil)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	r = b.do("POST", path("/v1/records/%d/retry-now", ids[1]), operatorToken, nil)
	require.Equal(t, http.StatusConflict, r.status, "a parked record is not scheduled")
}

// A body past the cap is refused with 413 before it is read, declared or not.
func TestBodyCap(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ids := b.park("orders", 1)
	r := b.do("POST", path("/v1/records/%d/discard", ids[0]), operatorToken, io.LimitReader(zeros{}, 50<<20))
	require.Equal(t, http.StatusRequestEntityTooLarge, r.status)
	require.Equal(t, "urn:dlq:problem:body-too-large", r.problem(t).Type)
	// A declared Content-Length over the cap is refused before the body is read.
	r = b.do("POST", path("/v1/records/%d/discard", ids[0]), operatorToken, bytes.NewReader(make([]byte, 2<<20)))
	require.Equal(t, http.StatusRequestEntityTooLarge, r.status)
	require.Equal(t, "urn:dlq:problem:body-too-large", r.problem(t).Type)

	big := `{"reason":"` + strings.Repeat("a", 2<<20) + `"}`
	req, err := http.NewRequest("POST", b.url+path("/v1/records/%d/discard", ids[0]), io.MultiReader(strings.NewReader(big)))
	require.NoError(t, err)
	req.ContentLength = -1 // chunked: the cap applies while reading
	req.Header.Set("Authorization", "Bearer "+operatorToken)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	validate(t, req, resp, raw)
	require.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode)
	var d api.RecordDetail
	b.do("GET", path("/v1/records/%d", ids[0]), viewerToken, nil).decode(t, &d)
	require.Equal(t, store.StatusParked, d.Record.Status, "nothing applied")
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// PostgreSQL down: 503 with Retry-After, and nothing of the cause in the body.
func TestDatabaseDown(t *testing.T) {
	t.Parallel()
	pool, err := pgxpool.New(context.Background(), "postgres://dlq@127.0.0.1:1/dlq?connect_timeout=2")
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	b := setupWith(t, store.New(pool))
	r := b.do("GET", "/v1/records", viewerToken, nil)
	require.Equal(t, http.StatusServiceUnavailable, r.status)
	require.Equal(t, "5", r.header.Get("Retry-After"))
	require.NotContains(t, string(r.body), "127.0.0.1")
	r = b.do("POST", "/v1/records/1/discard", operatorToken, api.DiscardRequest{Reason: "x"})
	require.Equal(t, http.StatusServiceUnavailable, r.status)
}

// The API is mounted next to the ops endpoints; those need no token.
func TestOpsEndpoints(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, p := range []string{"/healthz", "/readyz", "/metrics"} {
		r := b.do("GET", p, "", nil)
		require.Equal(t, http.StatusOK, r.status, p)
	}
	require.True(t, bytes.Contains(b.do("GET", "/metrics", "", nil).body, []byte("go_goroutines")))
}

// The key filter says its encoding (#12): key is the key as text, key_b64 its bytes in
// base64; a text key that happens to be valid base64 ("user") is still the text.
func TestKeyFilterTextOrBase64(t *testing.T) {
	t.Parallel()
	b := setup(t)
	user := b.park("users", 1, func(_ int, r *store.NewRecord) { r.Key = []byte("user") })[0]
	binary := b.park("bins", 1, func(_ int, r *store.NewRecord) { r.Key = []byte{0xff, 0x00, 0x01} })[0]
	b.park("orders", 3)
	list := func(q url.Values) []int64 {
		t.Helper()
		r := b.do("GET", "/v1/records?"+q.Encode(), viewerToken, nil)
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
		var page api.RecordPage
		r.decode(t, &page)
		var ids []int64
		for _, rec := range page.Records {
			ids = append(ids, rec.ID)
		}
		return ids
	}
	require.Equal(t, []int64{user}, list(url.Values{"key": {"user"}}), "user is text, though it is valid base64 too")
	require.Equal(t, []int64{user}, list(url.Values{"key_b64": {base64.StdEncoding.EncodeToString([]byte("user"))}}))
	require.Equal(t, []int64{binary}, list(url.Values{"key_b64": {base64.StdEncoding.EncodeToString([]byte{0xff, 0x00, 0x01})}}))
	require.Empty(t, list(url.Values{"key_b64": {"user"}}), "key_b64=user is the bytes ba eb 2b")

	str := func(s string) *string { return &s }
	dry := func(f *api.Filter) response {
		t.Helper()
		return b.do("POST", "/v1/bulk/replay", adminToken, api.BulkRequest{Filter: f, DryRun: true})
	}
	var count api.DryRun
	r := dry(&api.Filter{Key: str("user")})
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	r.decode(t, &count)
	require.EqualValues(t, 1, count.Count)
	dry(&api.Filter{KeyB64: str(base64.StdEncoding.EncodeToString([]byte{0xff, 0x00, 0x01}))}).decode(t, &count)
	require.EqualValues(t, 1, count.Count)
	for field, f := range map[string]*api.Filter{
		"filter.key_b64": {Key: str("user"), KeyB64: str("dXNlcg==")},
		"filter.key":     {Key: str("")},
	} {
		r := dry(f)
		require.Equal(t, http.StatusBadRequest, r.status, "%s", r.body)
		hasField(t, r, field)
	}
	for field, body := range map[string]string{
		"filter.key_b64": `{"dry_run":true,"filter":{"key_b64":"%%"}}`,
		"filter.key":     `{"dry_run":true,"filter":{"key":"a\u0000b"}}`,
	} {
		r := b.do("POST", "/v1/bulk/replay", adminToken, json.RawMessage(body))
		require.Equal(t, http.StatusBadRequest, r.status, "%s", r.body)
		hasField(t, r, field)
	}
	r = b.do("POST", "/v1/bulk/replay", adminToken, json.RawMessage(`{"dry_run":true,"filter":{"key_b64":""}}`))
	require.Equal(t, http.StatusBadRequest, r.status, "an empty key would not survive the job's stored filter")

	// A job shows its key as it can be given back: text when it is, base64 otherwise.
	one := int64(1)
	for _, f := range []*api.Filter{{Key: str("user")}, {KeyB64: str("/wAB")}} {
		r := b.do("POST", "/v1/bulk/discard", adminToken, api.BulkRequest{Filter: f, ConfirmCount: &one, Reason: "key"})
		require.Equal(t, http.StatusAccepted, r.status, "%s", r.body)
		var job api.Job
		r.decode(t, &job)
		require.Equal(t, f.Key, job.Filter.Key)
		require.Equal(t, f.KeyB64, job.Filter.KeyB64)
	}
}

// A token shorter than the minimum cannot be valid whatever tokens are configured: its 401
// says so, with the minimum, and a wrong token of a valid length keeps the plain answer,
// so the text tells nothing about the configured tokens.
func TestShortTokenIsRefusedWithItsReason(t *testing.T) {
	t.Parallel()
	b := setup(t)
	short := b.do("GET", "/v1/stats", "short-token", nil)
	require.Equal(t, http.StatusUnauthorized, short.status)
	require.Equal(t, fmt.Sprintf("the token is too short: a token has at least %d characters (`dlq-admin token new` makes one)", auth.MinTokenLength),
		short.problem(t).Detail)

	wrong := b.do("GET", "/v1/stats", strings.Repeat("x", auth.MinTokenLength), nil)
	require.Equal(t, http.StatusUnauthorized, wrong.status)
	require.Equal(t, "give a valid token: Authorization: Bearer <token>", wrong.problem(t).Detail)
	// A short prefix of a valid token is as short as any other.
	prefix := b.do("GET", "/v1/stats", adminToken[:auth.MinTokenLength-1], nil)
	require.Equal(t, short.problem(t).Detail, prefix.problem(t).Detail)
}

// A record whose original topic is no valid topic name (kept Go-quoted from headers that
// are not UTF-8 text) is never replayed to it: a replay without a target is refused and
// the record stays parked; with a replay topic it is accepted.
func TestReplayNeverTargetsAnIllegalOriginalTopic(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ids := b.park("orders", 1, func(_ int, r *store.NewRecord) {
		r.Origin.Topic, r.Reason = `"orders\xff"`, store.ReasonUnroutable
	})
	path := fmt.Sprintf("/v1/records/%d/replay", ids[0])
	r := b.do("POST", path, operatorToken, api.ReplayRequest{})
	require.Equal(t, http.StatusBadRequest, r.status, "%s", r.body)
	p := r.problem(t)
	require.Equal(t, "target_topic", p.Field)
	require.Contains(t, p.Detail, "not a valid topic name")
	rec, err := b.store.Get(context.Background(), ids[0])
	require.NoError(t, err)
	require.Equal(t, store.StatusParked, rec.Status)

	r = b.do("POST", path, operatorToken, api.ReplayRequest{TargetTopic: "orders.replay"})
	require.Equal(t, http.StatusAccepted, r.status, "%s", r.body)
}
