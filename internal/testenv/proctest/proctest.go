// Package proctest runs the project's binaries as child processes in tests: built as a user
// builds them (go build, no -race), started with their output appended to a log file,
// signalled, and killed when the test ends.
package proctest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Build builds the binaries of pkgs (import paths) into dir.
func Build(dir string, pkgs ...string) error {
	// The binaries build in the product's own module, with its go.sum, as users build them:
	// a test module that replaces it (deploy/) lists only what its own imports need.
	root, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/dlqops/dlq").Output()
	if err != nil {
		return fmt.Errorf("locate the product's module: %w", err)
	}
	cmd := exec.Command("go", append([]string{"build", "-o", dir + "/"}, pkgs...)...)
	cmd.Dir = strings.TrimSpace(string(root))
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("go build %v: %v\n%s", pkgs, err, out)
	}
	return nil
}

// Proc is a running binary. Its waiter goroutine owns err until it closes done.
type Proc struct {
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

// Spawn starts bin with args and env added to the environment, its output appended to
// logPath. It is safe outside the test's goroutine; the caller ends the process.
func Spawn(logPath string, env []string, bin string, args ...string) (*Proc, error) {
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		_ = logf.Close()
		return nil, err
	}
	p := &Proc{cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		_ = logf.Close()
		close(p.done)
	}()
	return p, nil
}

// Start is Spawn from the test's goroutine; the process is killed when the test ends.
func Start(t testing.TB, logPath string, env []string, bin string, args ...string) *Proc {
	t.Helper()
	p, err := Spawn(logPath, env, bin, args...)
	require.NoError(t, err)
	t.Cleanup(p.Kill)
	return p
}

// StartService is Start for a service the test ends gracefully: SIGTERM when the test
// ends, SIGKILL after grace; the tail of its log is shown when the test failed.
func StartService(t testing.TB, logPath string, env []string, grace time.Duration, bin string, args ...string) *Proc {
	t.Helper()
	p := Start(t, logPath, env, bin, args...)
	t.Cleanup(func() { // before Start's kill
		_ = p.Term(grace)
		if t.Failed() {
			log, _ := os.ReadFile(logPath)
			t.Logf("%s log (tail):\n%s", filepath.Base(bin), log[max(0, len(log)-3000):])
		}
	})
	return p
}

// Pid is the process id.
func (p *Proc) Pid() int { return p.cmd.Process.Pid }

// Done is closed when the process has exited.
func (p *Proc) Done() <-chan struct{} { return p.done }

// Err is the exit error, once Done is closed.
func (p *Proc) Err() error {
	<-p.done
	return p.err
}

// Signal sends sig; a process already gone ignores it.
func (p *Proc) Signal(sig syscall.Signal) { _ = p.cmd.Process.Signal(sig) }

// Kill sends SIGKILL and waits for the process to be gone.
func (p *Proc) Kill() {
	select {
	case <-p.done:
		return
	default:
	}
	p.Signal(syscall.SIGCONT) // a stopped process dies only once it runs
	p.Signal(syscall.SIGKILL)
	<-p.done
}

// Term sends SIGTERM and returns the exit error; after grace it kills the process.
func (p *Proc) Term(grace time.Duration) error {
	p.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return p.err
	case <-time.After(grace):
		p.Kill()
		return errors.New("did not exit within " + grace.String() + " of SIGTERM")
	}
}
