package proctest_test

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/testenv/proctest"
)

// A process's output is appended to its log; SIGTERM ends a process that honours it with
// its exit status; Kill ends even a stopped process; Err reports how it ended.
func TestProcLifecycle(t *testing.T) {
	log := filepath.Join(t.TempDir(), "p.log")
	require.NoError(t, os.WriteFile(log, []byte("before\n"), 0o600))

	p := proctest.Start(t, log, []string{"PROCTEST_WORD=hello"}, "/bin/sh", "-c", `echo "$PROCTEST_WORD"; trap 'exit 3' TERM; while :; do sleep 0.05; done`)
	require.Eventually(t, func() bool {
		b, _ := os.ReadFile(log)
		return string(b) == "before\nhello\n"
	}, time.Minute, 20*time.Millisecond)
	err := p.Term(time.Minute)
	var exit interface{ ExitCode() int }
	require.ErrorAs(t, err, &exit)
	require.Equal(t, 3, exit.ExitCode())

	stopped := proctest.Start(t, log, nil, "/bin/sh", "-c", "while :; do sleep 0.05; done")
	stopped.Signal(syscall.SIGSTOP)
	stopped.Kill()
	<-stopped.Done()
	require.ErrorContains(t, stopped.Err(), "killed")
}

// A service started by StartService gets SIGTERM when its test ends, and the time to
// honour it.
func TestStartServiceTerminatesAtTheEnd(t *testing.T) {
	log := filepath.Join(t.TempDir(), "s.log")
	var p *proctest.Proc
	t.Run("service", func(t *testing.T) {
		p = proctest.StartService(t, log, nil, time.Minute, "/bin/sh", "-c", `trap 'echo terminated; exit 0' TERM; echo up; while :; do sleep 0.05; done`)
		require.Eventually(t, func() bool {
			b, _ := os.ReadFile(log)
			return string(b) == "up\n"
		}, time.Minute, 20*time.Millisecond)
	})
	<-p.Done()
	require.NoError(t, p.Err(), "it exited by its TERM trap, not killed")
	b, err := os.ReadFile(log)
	require.NoError(t, err)
	require.Equal(t, "up\nterminated\n", string(b))
}
