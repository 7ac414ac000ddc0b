package scripts_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// `make dev` ends with scripts/dev-guide.sh: it says whether both binaries are ready at the
// addresses they were started on, hides the database password, and tells a newcomer how to
// make records fail and watch them. curl is replaced by a stub that answers /readyz on the
// worker's address only, so the guide's readiness lines are checked both ways without
// binding any port.
func TestDevGuideTellsHowToMakeRecordsFail(t *testing.T) {
	dev := t.TempDir()
	curlAnswers(t, dev, "127.0.0.1:19464")
	writePid(t, dev, "dlq-worker", sleeper(t))
	writePid(t, dev, "dlq-admin", sleeper(t))

	text := devGuide(t, dev, "127.0.0.1:19464", "127.0.0.1:18080")

	require.Regexp(t, `dlq-worker\s+http://127.0.0.1:19464\s+ready`, text)
	require.Regexp(t, `dlq-admin\s+http://127.0.0.1:18080\s+NOT READY`, text)
	require.Contains(t, text, "console     http://127.0.0.1:18080/ui/")
	require.Contains(t, text, "export DLQ_ADMIN_URL=http://127.0.0.1:18080 ")
	require.NotContains(t, text, ":9464")
	require.NotContains(t, text, ":8080")
	require.NotContains(t, text, "s3cret-pw")
	require.Contains(t, text, "postgres://dlq:***@127.0.0.1:1/dlq")
	require.Regexp(t, `(?s)Make something fail and watch it:\n\s+make fail\s`, text)
	require.Contains(t, text, "sign in with the token dev-operator-token")
}

// Another process answering /readyz on the worker's port is not the worker `make dev`
// started: when the process of the pid file has exited, the guide says so.
func TestDevGuideSaysWhenTheBinaryExited(t *testing.T) {
	dev := t.TempDir()
	curlAnswers(t, dev, "127.0.0.1:19464")
	exited := exec.Command("true")
	require.NoError(t, exited.Run())
	writePid(t, dev, "dlq-worker", exited.Process.Pid)
	writePid(t, dev, "dlq-admin", sleeper(t))

	text := devGuide(t, dev, "127.0.0.1:19464", "127.0.0.1:19464")

	require.Regexp(t, `dlq-worker\s+http://127.0.0.1:19464\s+NOT RUNNING`, text)
	require.Regexp(t, `dlq-admin\s+http://127.0.0.1:19464\s+ready`, text)
}

// curlAnswers puts a curl first in PATH (see devGuide) that succeeds for addr's /readyz only.
func curlAnswers(t *testing.T, dev, addr string) {
	stub := "#!/bin/sh\nfor a; do case $a in *" + addr + "/readyz) exit 0;; esac; done\nexit 7\n"
	require.NoError(t, os.MkdirAll(filepath.Join(dev, "bin"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dev, "bin", "curl"), []byte(stub), 0o755))
}

func devGuide(t *testing.T, dev, worker, admin string) string {
	cmd := exec.Command("./dev-guide.sh", dev, worker, admin)
	cmd.Env = append(os.Environ(),
		"PATH="+filepath.Join(dev, "bin")+":"+os.Getenv("PATH"),
		"KAFKA_BOOTSTRAP_SERVERS=127.0.0.1:1",
		"DATABASE_URL=postgres://dlq:s3cret-pw@127.0.0.1:1/dlq")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	return string(out)
}

// sleeper is a live process for a pid file, killed when the test ends.
func sleeper(t *testing.T) int {
	cmd := exec.Command("sleep", "600")
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd.Process.Pid
}

func writePid(t *testing.T, dev, name string, pid int) {
	require.NoError(t, os.WriteFile(filepath.Join(dev, name+".pid"), []byte(strconv.Itoa(pid)), 0o600))
}
