package adminconfig

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/config"
)

func TestAdminExampleLoads(t *testing.T) {
	t.Setenv("DATABASE_URL", "")
	var a Config
	p := writeFile(t, "database:\n  url: postgres://x\n")
	require.ErrorContains(t, config.Load(p, "DLQ_ADMIN_", &a), "tokens: at least one")

	a = Config{}
	t.Setenv("DLQ_ADMIN_DATABASE_URL", "postgres://x")
	require.ErrorContains(t, config.Load("../../../config/admin.example.yaml", "DLQ_ADMIN_", &a), "development token",
		"the example's well-known tokens are for make dev only")
	a = Config{}
	t.Setenv("DLQ_ADMIN_ALLOW_DEV_TOKENS", "true") // as make dev does
	require.NoError(t, config.Load("../../../config/admin.example.yaml", "DLQ_ADMIN_", &a))
	require.Len(t, a.Tokens, 3)
	require.EqualValues(t, 1<<20, a.MaxBodyBytes)
}

func TestAdminRejects(t *testing.T) {
	const tok = "tokens:\n  - {name: a, role: admin, sha256: 09efff657bfae4ecd817f106e6b280ed1fd9e8c156146efacd22acb5c26cbfaa}\n"
	for name, tc := range map[string]struct{ file, want string }{
		"plain token":             {"tokens:\n  - {name: a, role: admin, sha256: hunter2}\n", "tokens[0].sha256"},
		"bad role":                {"tokens:\n  - {name: a, role: root, sha256: 1734d503f6aa6a047c36d113cbad769f719c93784b469b771c4c3e7c63adbefd}\n", "tokens[0].role"},
		"dev token":               {"tokens:\n  - {name: a, role: admin, sha256: 1734d503f6aa6a047c36d113cbad769f719c93784b469b771c4c3e7c63adbefd}\n", "development token"},
		"bad topic":               {tok + "replay_topics: ['no spaces']\n", "replay_topics[0]"},
		"tiny body cap":           {tok + "max_body_bytes: 10\n", "max_body_bytes"},
		"all interfaces in clear": {tok + "http: {listen: ':8080'}\n", "http.listen"},
		"public address in clear": {tok + "http: {listen: '10.1.2.3:8080'}\n", "http.allow_insecure"},
		"cert without key":        {tok + "http: {listen: '10.1.2.3:8080', tls_cert_file: /x.crt}\n", "http.tls_cert_file, http.tls_key_file"},
		"zero timeout":            {tok + "http: {read_timeout: -1s}\n", "http.read_timeout"},
		"no connections":          {tok + "http: {max_conns: -1}\n", "http.max_conns"},
		"hostile json path":       {tok + "masking: {json_paths: ['$..[?(@.x)]'], hash_key_file: /dev/null}\n", "masking.json_paths[0]"},
		"regexp matching nothing": {tok + "masking: {patterns: ['x*']}\n", "masking.patterns[0]"},
		"rules without a key":     {tok + "masking: {headers: [authorization]}\n", "masking.hash_key_file"},
		"registry not a URL":      {tok + "schema_registry: {url: 'registry:8081'}\n", "schema_registry.url"},
		"registry auth, no url":   {tok + "schema_registry: {token_file: /t}\n", "schema_registry.url: required"},
		"registry user, no pass":  {tok + "schema_registry: {url: 'http://r:8081', username: u}\n", "schema_registry.username and schema_registry.password_file"},
		"registry basic and bearer": {tok + "schema_registry: {url: 'http://r:8081', username: u, password_file: /p, token_file: /t}\n",
			"schema_registry.token_file"},
		"registry cert without key": {tok + "schema_registry: {url: 'https://r:8081', cert_file: /c}\n", "schema_registry.cert_file"},
	} {
		t.Run(name, func(t *testing.T) {
			var a Config
			err := config.Load(writeFile(t, "database:\n  url: postgres://x\n"+tc.file), "DLQ_ADMIN_", &a)
			require.ErrorContains(t, err, tc.want)
		})
	}
}

// A non-loopback listener needs TLS, or allow_insecure for a TLS proxy in front.
func TestAdminListen(t *testing.T) {
	const tok = "tokens:\n  - {name: a, role: admin, sha256: 09efff657bfae4ecd817f106e6b280ed1fd9e8c156146efacd22acb5c26cbfaa}\n"
	for _, http := range []string{
		"{listen: '127.0.0.1:8080'}",
		"{listen: 'localhost:8080'}",
		"{listen: '[::1]:8080'}",
		"{listen: '0.0.0.0:8443', tls_cert_file: /etc/dlq/tls.crt, tls_key_file: /etc/dlq/tls.key}",
		"{listen: ':8080', allow_insecure: true}",
	} {
		var a Config
		require.NoError(t, config.Load(writeFile(t, "database:\n  url: postgres://x\n"+tok+"http: "+http+"\n"), "DLQ_ADMIN_", &a), http)
	}
	var a Config
	require.NoError(t, config.Load(writeFile(t, "database:\n  url: postgres://x\n"+tok), "DLQ_ADMIN_", &a))
	require.Equal(t, 30*time.Second, a.HTTP.ReadTimeout)
	require.Equal(t, 60*time.Second, a.HTTP.IdleTimeout)
	require.Equal(t, 256, a.HTTP.MaxConns)
}

func TestLoadMissingFile(t *testing.T) {
	var a Config
	require.ErrorContains(t, config.Load(filepath.Join(t.TempDir(), "nope.yaml"), "DLQ_ADMIN_", &a), "no such file")
}

func writeFile(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "c.yaml")
	require.NoError(t, os.WriteFile(p, []byte(body), 0o600))
	return p
}
