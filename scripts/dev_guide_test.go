package scripts_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// `make dev` ends with scripts/dev-guide.sh: it says whether both binaries are ready, hides
// the database password, and tells a newcomer how to make records fail and watch them.
// curl is replaced by a stub that answers /readyz for the worker only, so the guide's
// readiness lines are checked both ways without binding the dev ports.
func TestDevGuideTellsHowToMakeRecordsFail(t *testing.T) {
	bin := t.TempDir()
	stub := "#!/bin/sh\nfor a; do case $a in *127.0.0.1:9464/readyz) exit 0;; esac; done\nexit 7\n"
	require.NoError(t, os.WriteFile(filepath.Join(bin, "curl"), []byte(stub), 0o755))

	cmd := exec.Command("./dev-guide.sh")
	cmd.Env = append(os.Environ(),
		"PATH="+bin+":"+os.Getenv("PATH"),
		"KAFKA_BOOTSTRAP_SERVERS=127.0.0.1:1",
		"DATABASE_URL=postgres://dlq:s3cret-pw@127.0.0.1:1/dlq")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	text := string(out)

	require.Regexp(t, `dlq-worker\s+http://127.0.0.1:9464\s+ready`, text)
	require.Regexp(t, `dlq-admin\s+http://127.0.0.1:8080\s+NOT READY`, text)
	require.NotContains(t, text, "s3cret-pw")
	require.Contains(t, text, "postgres://dlq:***@127.0.0.1:1/dlq")
	require.Regexp(t, `(?s)Make something fail and watch it:\n\s+make fail\s`, text)
	require.Contains(t, text, "sign in with the token dev-operator-token")
}
