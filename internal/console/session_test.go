package console_test

import (
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
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

// TestSessionCookie checks the cookie a sign-in sets, over plain HTTP and over TLS, and
// that the sign-in form needs its double-submit cookie. Over TLS the cookies are Secure and
// __Host- prefixed (path /), and every answer carries HSTS.
func TestSessionCookie(t *testing.T) {
	a, err := auth.New([]auth.Token{{Name: "otto", SHA256: auth.Hash(operatorToken), Role: auth.Operator}})
	require.NoError(t, err)
	apiSrv, err := api.New(api.Config{Store: storetest.New(t), Auth: a, MaxBodyBytes: 1 << 20, Log: zerolog.Nop(),
		Registerer: prometheus.NewRegistry()})
	require.NoError(t, err)
	ui, err := console.New(console.Config{API: apiSrv, Auth: a, Audit: apiSrv, Spec: specfile.OpenAPI, Log: zerolog.Nop()})
	require.NoError(t, err)
	csrfField := regexp.MustCompile(`name="csrf" value="([^"]+)"`)

	for _, tls := range []bool{false, true} {
		ts := httptest.NewUnstartedServer(ui)
		if tls {
			ts.StartTLS()
		} else {
			ts.Start()
		}
		client := ts.Client()
		client.Jar, err = cookiejar.New(nil)
		require.NoError(t, err)
		client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

		resp, err := client.Get(ts.URL + "/ui/login")
		require.NoError(t, err)
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "+
			"form-action 'self'; frame-ancestors 'none'; base-uri 'none'", resp.Header.Get("Content-Security-Policy"))
		if tls {
			require.Equal(t, "max-age=63072000; includeSubDomains", resp.Header.Get("Strict-Transport-Security"))
		} else {
			require.Empty(t, resp.Header.Get("Strict-Transport-Security"), "HSTS means nothing over plain HTTP")
		}
		name, cookiePath := "dlq_console", "/ui/"
		if tls {
			name, cookiePath = "__Host-dlq_console", "/"
		}
		m := csrfField.FindSubmatch(body)
		require.NotNil(t, m)

		// Without the sign-in cookie (another site's form), the token is not even checked.
		bare := &http.Client{Transport: client.Transport, CheckRedirect: client.CheckRedirect}
		resp, err = bare.PostForm(ts.URL+"/ui/login", url.Values{"csrf": {string(m[1])}, "token": {operatorToken}})
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusForbidden, resp.StatusCode)
		for _, c := range resp.Cookies() {
			require.NotEqual(t, name, c.Name, "no session")
		}

		resp, err = client.PostForm(ts.URL+"/ui/login", url.Values{"csrf": {string(m[1])}, "token": {operatorToken}})
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusSeeOther, resp.StatusCode)
		var session *http.Cookie
		for _, c := range resp.Cookies() {
			if c.Name == name {
				session = c
			}
		}
		require.NotNil(t, session)
		require.True(t, session.HttpOnly)
		require.Equal(t, http.SameSiteStrictMode, session.SameSite)
		require.Equal(t, tls, session.Secure, "Secure exactly under TLS")
		require.Equal(t, 8*3600, session.MaxAge)
		require.Equal(t, cookiePath, session.Path)

		// Signing out ends the session on the server, not only in the browser.
		resp, err = client.Get(ts.URL + "/ui/jobs")
		require.NoError(t, err)
		body, err = io.ReadAll(resp.Body)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
		m = csrfField.FindSubmatch(body)
		require.NotNil(t, m)
		resp, err = client.PostForm(ts.URL+"/ui/logout", url.Values{"csrf": {string(m[1])}})
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusSeeOther, resp.StatusCode)
		req, err := http.NewRequest(http.MethodGet, ts.URL+"/ui/jobs", nil)
		require.NoError(t, err)
		req.AddCookie(&http.Cookie{Name: name, Value: session.Value})
		resp, err = bare.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusSeeOther, resp.StatusCode)
		require.True(t, strings.HasSuffix(resp.Header.Get("Location"), "/ui/login"))
		ts.Close()
	}
}
