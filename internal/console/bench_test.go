package console_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	specfile "github.com/dlqops/dlq/api"
	"github.com/dlqops/dlq/internal/api"
	"github.com/dlqops/dlq/internal/auth"
	"github.com/dlqops/dlq/internal/console"
	"github.com/dlqops/dlq/internal/store"
	"github.com/dlqops/dlq/internal/store/storetest"
	"github.com/dlqops/dlq/internal/testenv"
)

// BenchmarkConsolePages times the overview and the audit page against the API calls each
// is built on, at about 10k dead letters over three routes and a bulk job's audit trail
// of begin/finish rows per batch. Each sub-benchmark reports page/api: how many times the
// API calls' time the page takes (the console's own work: decoding, laying out,
// rendering).
//
//	go test -run '^$' -bench BenchmarkConsolePages ./internal/console/
func BenchmarkConsolePages(b *testing.B) {
	testenv.Integration(b)
	st := storetest.New(b)
	ctx := context.Background()
	since := time.Now().Add(-20 * time.Hour).UTC()
	const records, chunk = 10_000, 500
	for base := 0; base < records; base += chunk {
		batch := make([]store.NewRecord, chunk)
		for i := range batch {
			n := base + i
			route := fmt.Sprintf("route-%d", n%3)
			batch[i] = store.NewRecord{
				DLQ:    store.Coordinates{Topic: route + ".dlq", Partition: int32(n % 6), Offset: int64(n)},
				Origin: store.Origin{Topic: fmt.Sprintf("orders-%d", n%3), Partition: 0, Offset: int64(n)},
				Key:    fmt.Appendf(nil, "key-%d", n), Value: fmt.Appendf(nil, `{"order":%d}`, n),
				Timestamp:  since.Add(time.Duration(n) * 7 * time.Second),
				RetryCount: 5, ErrorClass: fmt.Sprintf("Err%d", n%40), ErrorMessage: fmt.Sprintf("order %d failed: downstream timed out", n),
				Reason: store.ReasonExhausted, Status: store.StatusParked, Route: route,
			}
		}
		_, err := st.StoreBatch(ctx, batch, nil)
		require.NoError(b, err)
	}
	// A bulk replay's trail: a begin and a finish row per batch of 100 records.
	for batch := range 200 {
		ids := make([]int64, 100)
		for i := range ids {
			ids[i] = int64(batch*100 + i + 1)
		}
		for _, action := range []string{"begin_replay", "finish_replay"} {
			require.NoError(b, st.Audit(ctx, store.AuditEntry{Actor: "ada", Action: action, RecordIDs: ids, JobID: 1, Affected: 100, Outcome: "ok"}))
		}
	}

	a, err := auth.New([]auth.Token{{Name: "ada", SHA256: auth.Hash(adminToken), Role: auth.Admin}})
	require.NoError(b, err)
	// The token's request rate out of the way: the loop asks as fast as it can, which is
	// what is measured, not what a token may.
	apiSrv, err := api.New(api.Config{Store: st, Auth: a, MaxBodyBytes: 1 << 20, Log: zerolog.Nop(), Registerer: prometheus.NewRegistry(),
		Limits: api.Limits{RequestsPerSecond: 1e6, Burst: 1e6}})
	require.NoError(b, err)
	b.Cleanup(apiSrv.Close)
	ui, err := console.New(console.Config{API: apiSrv, Auth: a, Audit: apiSrv, Spec: specfile.OpenAPI, Log: zerolog.Nop()})
	require.NoError(b, err)
	mux := http.NewServeMux()
	mux.Handle("/v1/", apiSrv)
	mux.Handle("/ui/", ui)
	ts := httptest.NewServer(mux)
	b.Cleanup(ts.Close)
	browser := signedInClient(b, ts.URL, adminToken)

	get := func(c *http.Client, path string, token string) {
		req, err := http.NewRequest(http.MethodGet, ts.URL+path, nil)
		require.NoError(b, err)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := c.Do(req)
		require.NoError(b, err)
		_, err = io.Copy(io.Discard, resp.Body)
		require.NoError(b, err)
		resp.Body.Close()
		require.Equal(b, http.StatusOK, resp.StatusCode, path)
	}
	for _, p := range []struct {
		name, page string
		calls      []string
	}{
		{"overview", "/ui/", []string{"/v1/stats", "/v1/stats/parked-over-time", "/v1/jobs?limit=50", "/v1/incidents?limit=5",
			"/v1/routes", "/v1/runs?limit=100"}},
		{"audit", "/ui/audit", []string{"/v1/audit"}},
	} {
		b.Run(p.name, func(b *testing.B) {
			var pageTime, apiTime time.Duration
			for b.Loop() {
				start := time.Now()
				get(browser, p.page, "")
				pageTime += time.Since(start)
				start = time.Now()
				for _, c := range p.calls {
					get(http.DefaultClient, c, adminToken)
				}
				apiTime += time.Since(start)
			}
			b.ReportMetric(float64(pageTime.Microseconds())/float64(b.N)/1000, "page-ms/op")
			b.ReportMetric(float64(apiTime.Microseconds())/float64(b.N)/1000, "api-ms/op")
			b.ReportMetric(float64(pageTime)/float64(apiTime), "page/api")
		})
	}
}

// signedInClient is an HTTP client signed in to the console at base with token.
func signedInClient(tb testing.TB, base, token string) *http.Client {
	tb.Helper()
	jar, err := cookiejar.New(nil)
	require.NoError(tb, err)
	c := &http.Client{Jar: jar, Timeout: time.Minute,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Get(base + "/ui/login")
	require.NoError(tb, err)
	body, err := io.ReadAll(resp.Body)
	require.NoError(tb, err)
	resp.Body.Close()
	m := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindSubmatch(body)
	require.NotNil(tb, m)
	resp, err = c.PostForm(base+"/ui/login", url.Values{"csrf": {string(m[1])}, "token": {token}})
	require.NoError(tb, err)
	resp.Body.Close()
	require.Equal(tb, http.StatusSeeOther, resp.StatusCode)
	return c
}
