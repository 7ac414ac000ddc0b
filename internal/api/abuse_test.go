package api_test

import (
	"bufio"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/api"
)

// The abuse suite: each test is one check of the README's security section, named with
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
