package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/dlqops/dlq/internal/api"
	"github.com/dlqops/dlq/internal/api/apitest"
	"github.com/dlqops/dlq/internal/auth"
	"github.com/dlqops/dlq/internal/ops"
	"github.com/dlqops/dlq/internal/store"
	"github.com/dlqops/dlq/internal/store/storetest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Tokens of the test server, by role; "orders" sees only records of original topic orders.
const (
	viewerToken   = "viewer-WfjZHPzLMNIYrmd04rgAeMnAwUvYVDuN"
	operatorToken = "operator-gJPc9KrmkpKaRjNKvAyaEdJWvLb8gaxa"
	adminToken    = "admin-pGQ-AHIDgYNQY8I5mOnjKXaA9TK77OwH"
	scopedToken   = "scoped-9dgCVlni84lsDy9XIpxbiFhumDsTliIV"
)

var tokens = []auth.Token{
	{Name: "vera", SHA256: auth.Hash(viewerToken), Role: auth.Viewer},
	{Name: "otto", SHA256: auth.Hash(operatorToken), Role: auth.Operator},
	{Name: "ada", SHA256: auth.Hash(adminToken), Role: auth.Admin},
	{Name: "sam", SHA256: auth.Hash(scopedToken), Role: auth.Admin, Topics: []string{"orders"}},
}

// bundle is one test's server on its own schema.
type bundle struct {
	t     *testing.T
	store *store.Store
	api   *api.Server
	url   string
}

func setup(t *testing.T) *bundle {
	t.Helper()
	st := storetest.New(t)
	return setupWith(t, st)
}

func setupWith(t *testing.T, st *store.Store, opts ...func(*api.Config)) *bundle {
	t.Helper()
	srv, url := newServer(t, st, opts...)
	return &bundle{t: t, store: st, api: srv, url: url}
}

// setupBench serves the API for a benchmark and returns its URL; the per-token rate limit
// is out of the way of the measured loop.
func setupBench(b *testing.B, st *store.Store) string {
	_, url := newServer(b, st, func(c *api.Config) { c.Limits.RequestsPerSecond, c.Limits.Burst = 1e9, 1e9 })
	return url
}

// newServer serves the API on st; opts adjust the configuration.
func newServer(t testing.TB, st *store.Store, opts ...func(*api.Config)) (*api.Server, string) {
	t.Helper()
	a, err := auth.New(tokens)
	require.NoError(t, err)
	o := ops.New(zerolog.Nop())
	cfg := api.Config{Store: st, Auth: a, ReplayTopics: []string{"orders.replay", "payments.replay"},
		MaxBodyBytes: 1 << 20, Log: zerolog.Nop(), Registerer: o.Registry}
	for _, opt := range opts {
		opt(&cfg)
	}
	srv, err := api.New(cfg)
	require.NoError(t, err)
	t.Cleanup(srv.Close) // before the store closes: the folded refusals' rows
	o.Mux.Handle("/v1/", srv)
	ts := httptest.NewServer(o.Mux)
	t.Cleanup(ts.Close)
	return srv, ts.URL
}

// response is a validated answer.
type response struct {
	status int
	header http.Header
	body   []byte
}

func (r response) decode(t *testing.T, v any) {
	t.Helper()
	require.NoError(t, json.Unmarshal(r.body, v), string(r.body))
}

func (r response) problem(t *testing.T) api.Problem {
	t.Helper()
	require.Equal(t, "application/problem+json", r.header.Get("Content-Type"), string(r.body))
	var p api.Problem
	r.decode(t, &p)
	require.Equal(t, r.status, p.Status)
	require.NotEmpty(t, p.RequestID)
	return p
}

// do sends a request and validates the response against the spec. body is JSON-encoded
// unless it is an io.Reader.
func (b *bundle) do(method, path, token string, body any, hdr ...string) response {
	b.t.Helper()
	return doReq(b.t, b.url, method, path, token, body, hdr...)
}

func doReq(t *testing.T, base, method, path, token string, body any, hdr ...string) response {
	t.Helper()
	var rd io.Reader
	switch v := body.(type) {
	case nil:
	case io.Reader:
		rd = v
	default:
		raw, err := json.Marshal(v)
		require.NoError(t, err)
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, base+path, rd)
	require.NoError(t, err)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	validate(t, req, resp, raw)
	return response{status: resp.StatusCode, header: resp.Header, body: raw}
}

func validate(t *testing.T, req *http.Request, resp *http.Response, body []byte) {
	t.Helper()
	apitest.Validate(t, req, resp.StatusCode, resp.Header, body)
}

// park stores n parked records of original topic topic and returns their ids.
func (b *bundle) park(topic string, n int, mod ...func(i int, r *store.NewRecord)) []int64 {
	b.t.Helper()
	return parkRecords(b.t, b.store, topic, n, mod...)
}

var parkSeq sync.Mutex
var parkOffset int64

func parkRecords(t testing.TB, st *store.Store, topic string, n int, mod ...func(i int, r *store.NewRecord)) []int64 {
	t.Helper()
	parkSeq.Lock()
	base := parkOffset
	parkOffset += int64(n)
	parkSeq.Unlock()
	recs := make([]store.NewRecord, n)
	for i := range recs {
		recs[i] = store.NewRecord{
			DLQ:        store.Coordinates{Topic: topic + ".dlq", Partition: 0, Offset: base + int64(i)},
			Origin:     store.Origin{Topic: topic, Partition: 0, Offset: int64(i)},
			Key:        []byte(fmt.Sprintf("key-%d", i)),
			Value:      []byte(fmt.Sprintf(`{"n":%d}`, i)),
			Headers:    []store.Header{{Key: "trace", Value: []byte{0xff, 0, 1}}, {Key: "retryCount", Value: []byte("5")}, {Key: "originalTopic", Value: []byte(topic)}},
			Timestamp:  time.UnixMilli(1_700_000_000_000 + int64(i)).UTC(),
			RetryCount: 5, ErrorClass: "TimeoutException", ErrorMessage: "downstream timed out",
			Reason: store.ReasonExhausted, Status: store.StatusParked, Route: topic + "-route",
		}
		for _, m := range mod {
			m(i, &recs[i])
		}
	}
	ids := make([]int64, 0, n)
	for start := 0; start < n; start += 5000 {
		end := min(start+5000, n)
		_, err := st.StoreBatch(context.Background(), recs[start:end], nil)
		require.NoError(t, err)
	}
	// Ids are assigned in insertion order within this test's schema.
	page, err := st.ListAfter(context.Background(), store.Filter{DLQTopic: topic + ".dlq"}, 0, min(n, store.MaxPageSize))
	require.NoError(t, err)
	for _, r := range page {
		if r.DLQ.Offset >= base && r.DLQ.Offset < base+int64(n) {
			ids = append(ids, r.ID)
		}
	}
	return ids
}

func path(format string, args ...any) string { return fmt.Sprintf(format, args...) }

func hasField(t *testing.T, r response, field string) {
	t.Helper()
	p := r.problem(t)
	require.Equal(t, field, p.Field, "%s", r.body)
	require.True(t, strings.HasPrefix(p.Type, "urn:dlq:problem:"))
}
