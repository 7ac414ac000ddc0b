package schemas_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/schemas"
)

// Secrets come from files: a missing or empty one is named at start-up; no URL is no
// registry.
func TestConfigReadsSecretFiles(t *testing.T) {
	r, err := schemas.New(schemas.Config{}, nil)
	require.NoError(t, err)
	require.Nil(t, r, "no url, no registry")

	_, err = schemas.New(schemas.Config{URL: "http://127.0.0.1:1", Username: "u", PasswordFile: "/nonexistent/pw"}, nil)
	require.ErrorContains(t, err, "schema_registry.password_file")

	empty := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(empty, []byte("\n"), 0o600))
	_, err = schemas.New(schemas.Config{URL: "http://127.0.0.1:1", TokenFile: empty}, nil)
	require.ErrorContains(t, err, "schema_registry.token_file: "+empty+" is empty")

	ca := filepath.Join(t.TempDir(), "ca.pem")
	require.NoError(t, os.WriteFile(ca, []byte("not a certificate"), 0o600))
	_, err = schemas.New(schemas.Config{URL: "https://127.0.0.1:1", CAFile: ca}, nil)
	require.ErrorContains(t, err, "schema_registry.ca_file")
}
