package api_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/api"
	"github.com/dlqops/dlq/internal/store"
	"github.com/dlqops/dlq/internal/store/storetest"
	"github.com/dlqops/dlq/internal/testenv"
)

// The abuse suite: each test is one check of docs/security.md, named with
// the OWASP API Security Top 10 (2023) item it covers.

// API4 (unrestricted resource consumption): a client's HTTP method never becomes a metric
// label, so made-up methods cannot grow the registry or /metrics.
func TestAbuseMethodNeverLabelsAMetric(t *testing.T) {
	t.Parallel()
	b := setup(t)
	method := "X" + strings.Repeat("EVILMETHOD", 500)
	for i := range 3 {
		for _, p := range []string{"/v1/records", "/v1/nowhere", "/v1/jobs/1"} {
			r := rawRequest(t, b.url, method+string(rune('A'+i)), p)
			require.Contains(t, []int{http.StatusNotFound, http.StatusMethodNotAllowed}, r.StatusCode, p)
		}
	}
	metrics := b.do("GET", "/metrics", "", nil).body
	require.NotContains(t, string(metrics), "EVILMETHOD")
	require.Contains(t, string(metrics), `dlq_admin_requests_total{code="405",method="other",route="/v1/records"} 3`)
	require.Contains(t, string(metrics), `dlq_admin_requests_total{code="404",method="other",route="unknown"} 3`)
}

// rawRequest sends a request whose method net/http's client would refuse to send.
func rawRequest(t *testing.T, base, method, path string) *http.Response {
	t.Helper()
	u, err := url.Parse(base)
	require.NoError(t, err)
	conn, err := net.Dial("tcp", u.Host)
	require.NoError(t, err)
	defer conn.Close()
	_, err = conn.Write([]byte(method + " " + path + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"))
	require.NoError(t, err)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err)
	resp.Body.Close()
	return resp
}

// API8 (security misconfiguration): every answer, success, problem or fallback, is kept
// out of caches, not sniffed, and carries a request id; a 405 lists the allowed methods.
func TestAbuseResponseHeaders(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ids := b.park("orders", 1)
	for _, r := range []response{
		b.do("GET", path("/v1/records/%d", ids[0]), viewerToken, nil),
		b.do("GET", "/v1/records", "", nil),
		b.do("GET", "/v1/nowhere", viewerToken, nil),
		b.do("DELETE", "/v1/records/1", adminToken, nil),
	} {
		require.Equal(t, "no-store", r.header.Get("Cache-Control"))
		require.Equal(t, "nosniff", r.header.Get("X-Content-Type-Options"))
		require.NotEmpty(t, r.header.Get("X-Request-Id"))
	}
	r := b.do("PUT", "/v1/records/1", adminToken, nil)
	require.Equal(t, http.StatusMethodNotAllowed, r.status)
	require.Equal(t, "GET", r.header.Get("Allow"))
	require.Equal(t, r.header.Get("X-Request-Id"), r.problem(t).RequestID)
	r = b.do("GET", "/v1/records/1/replay", adminToken, nil)
	require.Equal(t, "POST", r.header.Get("Allow"))
}

// API8: NUL and invalid UTF-8 in a query parameter, a route name, an Idempotency-Key or a
// body string are a 400 naming the parameter, not a database error.
func TestAbuseInvalidText(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ids := b.park("orders", 1)
	for _, q := range []string{"error_contains", "original_topic", "dlq_topic", "route", "error_class", "cursor"} {
		for _, v := range []string{"a\x00b", "a\xffb"} {
			r := b.do("GET", "/v1/records?"+q+"="+url.QueryEscape(v), viewerToken, nil)
			require.Equal(t, http.StatusBadRequest, r.status, "%s=%q: %s", q, v, r.body)
			hasField(t, r, q)
		}
	}
	r := b.do("GET", "/v1/runs?route=%00", viewerToken, nil)
	hasField(t, r, "route")
	r = b.do("POST", "/v1/routes/a%00b/pause", operatorToken, nil)
	require.Equal(t, http.StatusBadRequest, r.status, "%s", r.body)
	hasField(t, r, "route")
	r = b.do("POST", "/v1/routes/a%FFb/run", operatorToken, nil)
	hasField(t, r, "route")
	r = b.do("POST", path("/v1/records/%d/replay", ids[0]), operatorToken, nil, "Idempotency-Key", "k\xff")
	require.Equal(t, http.StatusBadRequest, r.status, "%s", r.body)
	hasField(t, r, "Idempotency-Key")
	r = b.do("POST", path("/v1/records/%d/discard", ids[0]), operatorToken, api.DiscardRequest{Reason: "nul\x00here"})
	hasField(t, r, "reason")
	r = b.do("POST", path("/v1/records/%d/replay", ids[0]), operatorToken, api.ReplayRequest{TargetTopic: "x\x00"})
	hasField(t, r, "target_topic")
	r = b.do("POST", "/v1/bulk/replay", adminToken, api.BulkRequest{Filter: &api.Filter{ErrorContains: "\x00"}, DryRun: true})
	hasField(t, r, "filter.error_contains")
	r = b.do("POST", "/v1/bulk/discard", adminToken, api.BulkRequest{Filter: &api.Filter{Route: "r\x00"}, DryRun: true, Reason: "x"})
	hasField(t, r, "filter.route")
}

// auditRows returns the audit rows of the test's schema, oldest first.
func auditRows(t *testing.T, st *store.Store) []store.AuditEntry {
	t.Helper()
	rows, err := st.ListAudit(context.Background(), 0, store.MaxPageSize)
	require.NoError(t, err)
	slices.Reverse(rows)
	return rows
}

// API2 and API1 (every attempt leaves a trace, as docs/semantics.md promises): every refused request is in
// the audit log exactly once, with the server's and the client's request ids, even when
// the refusal rolled back the transaction that would have written it: 401, 403, an
// out-of-scope 404, a 400 target refusal, 409s of replays and bulk jobs.
func TestAbuseRefusalsAreAudited(t *testing.T) {
	t.Parallel()
	b := setup(t)
	orders := b.park("orders", 3)
	payments := b.park("payments", 1)
	discarded := orders[2]
	require.Equal(t, http.StatusOK, b.do("POST", path("/v1/records/%d/discard", discarded), operatorToken, api.DiscardRequest{Reason: "x"}).status)
	before := len(auditRows(t, b.store))

	type refusal struct {
		r                response
		actor, outcome   string
		action, clientID string
	}
	var refusals []refusal
	refuse := func(status int, actor, outcome, action, method, p, token string, body any) {
		t.Helper()
		clientID := fmt.Sprintf("client-%d", len(refusals))
		r := b.do(method, p, token, body, "X-Request-Id", clientID)
		require.Equal(t, status, r.status, "%s %s: %s", method, p, r.body)
		require.NotEqual(t, clientID, r.header.Get("X-Request-Id"), "the server's own id")
		refusals = append(refusals, refusal{r, actor, outcome, action, clientID})
	}
	refuse(401, "anonymous", "unauthorized", "GET /v1/records", "GET", "/v1/records", "", nil)
	refuse(403, "vera", "forbidden", "POST /v1/records/{id}/discard", "POST", path("/v1/records/%d/discard", orders[0]), viewerToken, api.DiscardRequest{Reason: "x"})
	refuse(404, "sam", "not_found", "GET /v1/records/{id}", "GET", path("/v1/records/%d", payments[0]), scopedToken, nil)
	refuse(400, "otto", "invalid", "POST /v1/records/{id}/replay", "POST", path("/v1/records/%d/replay", orders[0]), operatorToken, api.ReplayRequest{TargetTopic: "elsewhere"})
	refuse(409, "otto", "conflict", "POST /v1/records/{id}/replay", "POST", path("/v1/records/%d/replay", discarded), operatorToken, nil)
	wrong := int64(99)
	refuse(409, "ada", "conflict", "POST /v1/bulk/replay", "POST", "/v1/bulk/replay", adminToken, api.BulkRequest{Filter: &api.Filter{}, ConfirmCount: &wrong})
	// The store audits this one in its own transaction; it must not be written twice.
	r := b.do("POST", path("/v1/records/%d/discard", discarded), operatorToken, api.DiscardRequest{Reason: "again"})
	require.Equal(t, http.StatusConflict, r.status)

	rows := auditRows(t, b.store)[before:]
	require.Len(t, rows, len(refusals)+1, "%+v", rows)
	for i, want := range refusals {
		got := rows[i]
		require.Equal(t, want.actor, got.Actor, "%+v", got)
		require.Equal(t, want.outcome, got.Outcome, "%+v", got)
		require.Equal(t, want.action, got.Action, "%+v", got)
		require.Equal(t, want.r.header.Get("X-Request-Id"), got.RequestID)
		require.Equal(t, want.clientID, got.ClientRequestID)
	}
	require.Equal(t, "discard", rows[len(refusals)].Action)
	require.Equal(t, "conflict", rows[len(refusals)].Outcome)
}

// API4: refusals of unauthenticated requests are audited at most
// limits.unauthenticated_audit_per_second (burst 10); the rest are counted.
func TestAbuseUnauthenticatedAuditIsRateLimited(t *testing.T) {
	t.Parallel()
	now := time.Now()
	b := setupWith(t, storetest.New(t), func(c *api.Config) { c.Clock = func() time.Time { return now } })
	for range 50 {
		require.Equal(t, http.StatusUnauthorized, b.do("GET", "/v1/stats", "not-a-token", nil).status)
	}
	require.Len(t, auditRows(t, b.store), 10, "the burst; the clock does not move")
	require.Contains(t, string(b.do("GET", "/metrics", "", nil).body), "dlq_admin_unaudited_refusals_total 40")
}

// API6: a bulk job by filter retried with its Idempotency-Key returns the job it created,
// although the server bounded the selection at the time of the first request and the
// job changed the records since; the same key for another selection is a conflict.
func TestAbuseIdempotentBulkByFilter(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var now time.Time
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	b := setupWith(t, storetest.New(t), func(c *api.Config) { c.Clock = clock })
	ids := b.park("orders", 3)
	mu.Lock()
	now = time.Now() // after the records were stored
	mu.Unlock()
	n := int64(3)
	req := api.BulkRequest{Filter: &api.Filter{OriginalTopic: "orders"}, ConfirmCount: &n, Reason: "retried"}
	r := b.do("POST", "/v1/bulk/discard", adminToken, req, "Idempotency-Key", "bulk-1")
	require.Equal(t, http.StatusAccepted, r.status, "%s", r.body)
	var job api.Job
	r.decode(t, &job)

	mu.Lock()
	now = now.Add(time.Minute)
	mu.Unlock()
	_, err := b.store.DiscardRecords(context.Background(), job.ID, ids, store.Actor{Name: "dlq-worker"})
	require.NoError(t, err)
	r = b.do("POST", "/v1/bulk/discard", adminToken, req, "Idempotency-Key", "bulk-1")
	require.Equal(t, http.StatusAccepted, r.status, "%s", r.body)
	require.Equal(t, "true", r.header.Get("Idempotent-Replayed"))
	var again api.Job
	r.decode(t, &again)
	require.Equal(t, job.ID, again.ID)

	other := api.BulkRequest{Filter: &api.Filter{OriginalTopic: "payments"}, ConfirmCount: new(int64), Reason: "retried"}
	r = b.do("POST", "/v1/bulk/discard", adminToken, other, "Idempotency-Key", "bulk-1")
	require.Equal(t, http.StatusConflict, r.status, "%s", r.body)
}

// API8: a JSON body is read exactly as sent: text that is not UTF-8 (in a value or a
// key), a key given twice and a key in other letter case are each a 400 naming the field,
// never a replacement character in the audit log, the last value winning or a dry run
// asked for as "DRY_RUN".
func TestAbuseStrictJSON(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ids := b.park("orders", 1)
	discard := path("/v1/records/%d/discard", ids[0])
	for _, c := range []struct{ path, token, body, field string }{
		{discard, operatorToken, "{\"reason\":\"a\xffb\"}", "reason"},
		{discard, operatorToken, "{\"rea\xffson\":\"ab\"}", "body"},
		{discard, operatorToken, `{"reason":"first","reason":"second"}`, "reason"},
		{discard, operatorToken, `{"reason":"first","Reason":"second"}`, "Reason"},
		{discard, operatorToken, `{"REASON":"upper"}`, "REASON"},
		{"/v1/bulk/replay", adminToken, "{\"filter\":{\"error_contains\":\"\xfe\"},\"dry_run\":true}", "filter.error_contains"},
		{"/v1/bulk/replay", adminToken, `{"filter":{"route":"a","route":"b"},"dry_run":true}`, "filter.route"},
		{"/v1/bulk/replay", adminToken, `{"filter":{},"DRY_RUN":true}`, "DRY_RUN"},
		{"/v1/bulk/discard", adminToken, `{"ids":[1],"dry_run":true,"reason":"x","dry_run":false}`, "dry_run"},
	} {
		r := b.do("POST", c.path, c.token, strings.NewReader(c.body))
		require.Equal(t, http.StatusBadRequest, r.status, "%q: %s", c.body, r.body)
		hasField(t, r, c.field)
	}
	rec, err := b.store.Get(context.Background(), ids[0])
	require.NoError(t, err)
	require.Equal(t, store.StatusParked, rec.Status, "no refused body discarded the record")
	for _, row := range auditRows(t, b.store) {
		require.NotContains(t, row.Reason, "\ufffd", "%+v", row)
	}
}

// API3 (excessive data exposure) and API6: a dry run by ids counts the records the job
// would act on: ids of records that do not exist or are no longer parked or scheduled are
// not counted, so a count does not confirm a guess.
func TestAbuseDryRunByIDsCountsRecords(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ids := b.park("orders", 3)
	require.Equal(t, http.StatusOK, b.do("POST", path("/v1/records/%d/discard", ids[2]), operatorToken, api.DiscardRequest{Reason: "x"}).status)
	for _, kind := range []string{"replay", "discard"} {
		req := api.BulkRequest{IDs: []int64{ids[0], ids[1], ids[2], ids[2] + 1000, 1 << 40}, DryRun: true}
		if kind == "discard" {
			req.Reason = "dry"
		}
		r := b.do("POST", "/v1/bulk/"+kind, adminToken, req)
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
		var dry api.DryRun
		r.decode(t, &dry)
		require.Equal(t, int64(2), dry.Count, kind)
	}
}

// A client that goes away is neither a database outage nor a half-made change: a pause
// whose client left before the server ran it is applied and audited whole, and a read
// whose client left is logged at INFO as cancelled (status 499, not a 503 at ERROR).
func TestAbuseClientGoneIsNotAnOutage(t *testing.T) {
	t.Parallel()
	var logs testenv.SyncBuffer
	b := setupWith(t, storetest.New(t), func(c *api.Config) { c.Log = zerolog.New(&logs) })
	gone := func(method, target, token string) *httptest.ResponseRecorder {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		req := httptest.NewRequestWithContext(ctx, method, target, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		rec := httptest.NewRecorder()
		b.api.ServeHTTP(rec, req)
		return rec
	}
	require.NoError(t, b.store.RegisterRoutes(context.Background(), []string{"orders-route"}, "dlq-worker/w1"))
	rec := gone("POST", "/v1/routes/orders-route/pause", operatorToken)
	require.Equal(t, http.StatusOK, rec.Code, "%s", rec.Body)
	routes, err := b.store.RouteControls(context.Background())
	require.NoError(t, err)
	require.Len(t, routes, 1)
	require.True(t, routes[0].Paused)
	rows := auditRows(t, b.store)
	require.Len(t, rows, 1)
	require.Equal(t, "ok", rows[0].Outcome, "%+v", rows[0])

	rec = gone("GET", "/v1/records", viewerToken)
	require.Equal(t, 499, rec.Code, "%s", rec.Body)
	require.Len(t, auditRows(t, b.store), 1, "a read the client left is not audited")
	var line map[string]any
	for _, l := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		require.NoError(t, json.Unmarshal([]byte(l), &line))
		require.NotEqual(t, "error", line["level"], l)
		if line["route"] == "/v1/records" {
			require.Equal(t, "info", line["level"], l)
			require.Equal(t, true, line["cancelled"], l)
			require.InDelta(t, 499, line["status"], 0, l)
		}
	}
}
