package console_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	specfile "github.com/dlqops/dlq/api"
	"github.com/dlqops/dlq/internal/api"
	"github.com/dlqops/dlq/internal/auth"
	"github.com/dlqops/dlq/internal/console"
	"github.com/dlqops/dlq/internal/store/storetest"
)

// The console's abuse suite: each test is one attack of the README's security section,
// named with the OWASP API Security Top 10 (2023) item it covers.

// consoleServer serves the API and the console on a fresh schema, as dlq-admin mounts
// them; adjust changes the console's configuration.
func consoleServer(t *testing.T, adjust ...func(*console.Config)) *httptest.Server {
	t.Helper()
	a, err := auth.New([]auth.Token{
		{Name: "vera", SHA256: auth.Hash(viewerToken), Role: auth.Viewer},
		{Name: "otto", SHA256: auth.Hash(operatorToken), Role: auth.Operator},
	})
	require.NoError(t, err)
	apiSrv, err := api.New(api.Config{Store: storetest.New(t), Auth: a, MaxBodyBytes: 1 << 20, Log: zerolog.Nop(),
		Registerer: prometheus.NewRegistry()})
	require.NoError(t, err)
	cfg := console.Config{API: apiSrv, Auth: a, Spec: specfile.OpenAPI, Log: zerolog.Nop()}
	for _, f := range adjust {
		f(&cfg)
	}
	ui, err := console.New(cfg)
	require.NoError(t, err)
	mux := http.NewServeMux()
	mux.Handle("/v1/", apiSrv)
	mux.Handle("/ui/", ui)
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	return ts
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
