package daemon

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/ops"
)

// The health subcommand asks the listener on loopback, in the scheme it serves; a
// listener without a fixed port cannot be asked.
func TestHealthURL(t *testing.T) {
	for listen, want := range map[string]string{
		":9464":          "http://127.0.0.1:9464/readyz",
		"0.0.0.0:9464":   "http://127.0.0.1:9464/readyz",
		"[::]:9464":      "http://127.0.0.1:9464/readyz",
		"127.0.0.1:9464": "http://127.0.0.1:9464/readyz",
		"10.1.2.3:9464":  "http://10.1.2.3:9464/readyz",
	} {
		got, err := localURL(ops.HTTP{Listen: listen}, "/readyz")
		require.NoError(t, err, listen)
		require.Equal(t, want, got, listen)
	}
	got, err := localURL(ops.HTTP{Listen: ":8080", TLSCertFile: "/etc/dlq/tls/tls.crt"}, "/healthz")
	require.NoError(t, err)
	require.Equal(t, "https://127.0.0.1:8080/healthz", got)
	_, err = localURL(ops.HTTP{Listen: "127.0.0.1:0"}, "/readyz")
	require.ErrorContains(t, err, "no fixed port")
}
