package console_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
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
)

// The console's abuse suite: each test is one attack of the README's security section,
// named with the OWASP API Security Top 10 (2023) item it covers.

// consoleUnderTest is the API and the console on a fresh schema, mounted as dlq-admin
// mounts them.
type consoleUnderTest struct {
	*httptest.Server
	store *store.Store
	api   *api.Server
	ui    *console.Server
	// metrics is the API's registry.
	metrics *prometheus.Registry
}

// consoleServer serves the API and the console; adjust changes their configurations.
func consoleServer(t *testing.T, adjust ...func(*api.Config, *console.Config)) consoleUnderTest {
	t.Helper()
	a, err := auth.New([]auth.Token{
		{Name: "vera", SHA256: auth.Hash(viewerToken), Role: auth.Viewer},
		{Name: "otto", SHA256: auth.Hash(operatorToken), Role: auth.Operator},
	})
	require.NoError(t, err)
	st := storetest.New(t)
	reg := prometheus.NewRegistry()
	cfg := api.Config{Store: st, Auth: a, MaxBodyBytes: 1 << 20, Log: zerolog.Nop(), Registerer: reg}
	var uiCfg console.Config
	for _, f := range adjust {
		f(&cfg, &uiCfg)
	}
	apiSrv, err := api.New(cfg)
	require.NoError(t, err)
	t.Cleanup(apiSrv.Close) // before the store closes: the folded refusals' rows
	uiCfg.API, uiCfg.Auth, uiCfg.Audit, uiCfg.Spec, uiCfg.Log = apiSrv, a, apiSrv, specfile.OpenAPI, zerolog.Nop()
	uiCfg.Registerer = reg
	ui, err := console.New(uiCfg)
	require.NoError(t, err)
	mux := http.NewServeMux()
	mux.Handle("/v1/", apiSrv)
	mux.Handle("/ui/", ui)
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	return consoleUnderTest{Server: ts, store: st, api: apiSrv, ui: ui, metrics: reg}
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(body)
}

// API8 (security misconfiguration): the static files are served, their directory is not
// listed.
func TestAbuseStaticHasNoListing(t *testing.T) {
	t.Parallel()
	ts := consoleServer(t)
	for _, p := range []string{"/ui/static/", "/ui/static/./", "/ui/static"} {
		code, body := get(t, ts.URL+p)
		require.NotEqual(t, http.StatusOK, code, "%s: %s", p, body)
		require.NotContains(t, body, "console.js", p)
	}
	code, _ := get(t, ts.URL+"/ui/static/console.js")
	require.Equal(t, http.StatusOK, code)
}

// signIn posts the sign-in form with token from addr, straight to the console's handler
// (so the test chooses the client's address), with a matching double-submit cookie.
func signIn(c consoleUnderTest, addr, token string) *httptest.ResponseRecorder {
	form := url.Values{"csrf": {"form-token"}, "token": {token}}
	req := httptest.NewRequest(http.MethodPost, "/ui/login", strings.NewReader(form.Encode()))
	req.RemoteAddr = addr
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.AddCookie(&http.Cookie{Name: "dlq_console_login", Value: "form-token"})
	rec := httptest.NewRecorder()
	c.ui.ServeHTTP(rec, req)
	return rec
}

// API2 (broken authentication): 100 wrong sign-ins from one address are throttled (429
// with Retry-After) and every one is audited, folded per address and window; the address
// is throttled, not the operators: the right token from another address signs in.
func TestAbuseSignInIsThrottledAndAudited(t *testing.T) {
	t.Parallel()
	c := consoleServer(t)
	const attacker = "192.0.2.7:40000"
	codes := map[int]int{}
	for i := range 100 {
		rec := signIn(c, attacker, fmt.Sprintf("guess-%03d-0123456789abcdef", i))
		codes[rec.Code]++
		if rec.Code == http.StatusTooManyRequests {
			s, err := strconv.Atoi(rec.Header().Get("Retry-After"))
			require.NoError(t, err)
			require.Positive(t, s)
		} else {
			require.Equal(t, http.StatusUnauthorized, rec.Code, "%s", rec.Body)
		}
	}
	require.Positive(t, codes[http.StatusTooManyRequests], "%v", codes)
	require.LessOrEqual(t, codes[http.StatusUnauthorized], 20, "%v", codes)

	// One token prefix from one address is throttled sooner than the address.
	const other = "192.0.2.8:40000"
	for range 5 {
		require.Equal(t, http.StatusUnauthorized, signIn(c, other, "samepfx-wrong-0123456789abcdef").Code)
	}
	require.Equal(t, http.StatusTooManyRequests, signIn(c, other, "samepfx-wrong-0123456789abcdef").Code)

	rec := signIn(c, "198.51.100.1:50000", operatorToken)
	require.Equal(t, http.StatusSeeOther, rec.Code, "the operator is not locked out: %s", rec.Body)
	require.Equal(t, http.StatusSeeOther, signIn(c, other, operatorToken).Code, "another prefix from a throttled pair's address")

	c.api.Close()
	rows, err := c.store.ListAudit(context.Background(), 0, store.MaxPageSize)
	require.NoError(t, err)
	require.LessOrEqual(t, len(rows), 10, "folded per address, outcome and window: %+v", rows)
	var accounted int64
	for _, r := range rows {
		require.Equal(t, "POST /ui/login", r.Action)
		require.Equal(t, "anonymous", r.Actor)
		require.Contains(t, []string{"unauthorized", "rate_limited"}, r.Outcome)
		require.Contains(t, r.Reason, "192.0.2.")
		if r.Affected == 0 {
			accounted++
		} else {
			accounted += r.Affected
		}
	}
	require.Equal(t, int64(100+6), accounted, "every failed sign-in is audited: %+v", rows)
	counts := map[string]float64{}
	families, err := c.metrics.Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() == "dlq_admin_console_signins_total" {
			for _, m := range f.GetMetric() {
				counts[m.GetLabel()[0].GetValue()] = m.GetCounter().GetValue()
			}
		}
	}
	require.InDelta(t, 106, counts["unauthorized"]+counts["rate_limited"], 0, "%v", counts)
	require.InDelta(t, 2, counts["ok"], 0, "%v", counts)
}

// API4: the console has its own budget of requests in progress per token: a token's API
// requests holding all of limits.max_concurrent do not refuse its operator's pages with
// "Too many requests", and the pages do not take the scripts' places either.
func TestAbuseConsoleHasItsOwnBudget(t *testing.T) {
	t.Parallel()
	c := consoleServer(t, func(cfg *api.Config, _ *console.Config) { cfg.Limits.MaxConcurrent = 1 })
	rec := signIn(c, "198.51.100.1:50000", operatorToken)
	require.Equal(t, http.StatusSeeOther, rec.Code, "%s", rec.Body)
	session := rec.Result().Cookies()

	// One API request of the token, held in its handler while its body is still coming.
	pr, pw := io.Pipe()
	t.Cleanup(func() { _ = pw.CloseWithError(io.ErrUnexpectedEOF) })
	held := make(chan int)
	go func() {
		req, _ := http.NewRequest(http.MethodPost, c.URL+"/v1/records/1/discard", pr)
		req.Header.Set("Authorization", "Bearer "+operatorToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			held <- 0
			return
		}
		resp.Body.Close()
		held <- resp.StatusCode
	}()
	require.Eventually(t, func() bool {
		families, err := c.metrics.Gather()
		require.NoError(t, err)
		for _, f := range families {
			if f.GetName() == "dlq_admin_requests_in_flight" {
				return f.GetMetric()[0].GetGauge().GetValue() == 1
			}
		}
		return false
	}, 30*time.Second, 20*time.Millisecond)
	req, err := http.NewRequest(http.MethodGet, c.URL+"/v1/stats", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+operatorToken)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode, "the token's API budget is used up")

	for _, page := range []string{"/ui/", "/ui/jobs", "/ui/audit", "/ui/records", "/ui/routes", "/ui/runs"} {
		req := httptest.NewRequest(http.MethodGet, page, nil)
		for _, ck := range session {
			req.AddCookie(ck)
		}
		rec := httptest.NewRecorder()
		c.ui.ServeHTTP(rec, req)
		require.Equal(t, http.StatusOK, rec.Code, "%s: %s", page, rec.Body)
	}
	_, _ = pw.Write([]byte(`{"reason":"held"}`))
	require.NoError(t, pw.Close())
	require.Equal(t, http.StatusNotFound, <-held)
}

// API8: behind a TLS-terminating proxy (plain HTTP to dlq-admin, public_url https) the
// session and sign-in cookies are still Secure and __Host- prefixed, and answers carry
// HSTS; the sign-in works with the prefixed cookies.
func TestAbuseCookiesSecureBehindTLSProxy(t *testing.T) {
	t.Parallel()
	c := consoleServer(t, func(_ *api.Config, ui *console.Config) { ui.PublicURL = "https://dlq.example.com" })
	rec := httptest.NewRecorder()
	c.ui.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/ui/login", nil))
	require.Equal(t, http.StatusOK, rec.Code)
	require.Equal(t, "max-age=63072000; includeSubDomains", rec.Header().Get("Strict-Transport-Security"))
	login := rec.Result().Cookies()
	require.Len(t, login, 1)
	require.Equal(t, "__Host-dlq_console_login", login[0].Name)
	require.True(t, login[0].Secure)
	require.Equal(t, "/", login[0].Path)

	form := url.Values{"csrf": {login[0].Value}, "token": {operatorToken}}
	req := httptest.NewRequest(http.MethodPost, "/ui/login", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.AddCookie(login[0])
	rec = httptest.NewRecorder()
	c.ui.ServeHTTP(rec, req)
	require.Equal(t, http.StatusSeeOther, rec.Code, "%s", rec.Body)
	var session *http.Cookie
	for _, ck := range rec.Result().Cookies() {
		if ck.Name == "__Host-dlq_console" {
			session = ck
		}
	}
	require.NotNil(t, session, "%v", rec.Result().Cookies())
	require.True(t, session.Secure)
	require.True(t, session.HttpOnly)
	require.Equal(t, "/", session.Path)
	require.Empty(t, session.Domain)
}
