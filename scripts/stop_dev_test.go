// Package scripts_test tests the shell scripts the Makefile runs.
package scripts_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// proc is a child process posing as a binary `make dev` started: argv[0] is name, and
// onTerm is what its shell does on SIGTERM. It is reaped as soon as it exits, so that
// "exited" is observable (an unreaped child is a zombie, alive for kill -0).
type proc struct {
	cmd    *exec.Cmd
	exited chan struct{}
}

func start(t *testing.T, dir, name, onTerm string) *proc {
	t.Helper()
	cmd := exec.Command("bash", "-c", "trap '"+onTerm+"' TERM; while :; do sleep 0.05; done")
	cmd.Args[0] = name
	require.NoError(t, cmd.Start())
	p := &proc{cmd: cmd, exited: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-p.exited
	})
	require.NoError(t, os.WriteFile(filepath.Join(dir, name+".pid"), []byte(strconv.Itoa(cmd.Process.Pid)), 0o600))
	return p
}

func (p *proc) hasExited() bool {
	select {
	case <-p.exited:
		return true
	default:
		return false
	}
}

// `make down` stops the binaries and returns only once they have exited (a worker needs
// Kafka and PostgreSQL for its shutdown, so the stack must wait for it); one that ignores
// SIGTERM past the wait is killed; a stale pid file naming another process is only removed.
func TestStopDevWaitsForTheBinaries(t *testing.T) {
	dir := t.TempDir()
	slow := start(t, dir, "dlq-worker", "sleep 1; exit 0") // finishing its in-flight work
	stubborn := start(t, dir, "dlq-admin", "")             // ignores SIGTERM
	other := start(t, t.TempDir(), "unrelated", "exit 0")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "dlq-extra.pid"), []byte(strconv.Itoa(other.cmd.Process.Pid)), 0o600))

	out, err := exec.Command("./stop-dev.sh", dir, "3").CombinedOutput()

	require.NoError(t, err, "%s", out)
	require.True(t, slow.hasExited(), "returned before the worker exited: %s", out)
	require.True(t, stubborn.hasExited(), "a binary ignoring SIGTERM is killed: %s", out)
	require.Contains(t, string(out), "dlq-worker stopped")
	require.Contains(t, string(out), "dlq-admin (pid ")
	require.False(t, other.hasExited(), "a reused pid is not ours to stop")
	left, _ := filepath.Glob(filepath.Join(dir, "*.pid"))
	require.Empty(t, left)
}
