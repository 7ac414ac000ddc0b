package kafkatest

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"
)

// fatalRecorder is a testing.TB whose Fatal ends the calling goroutine and keeps the
// message, for a test of a helper that must fail its test.
type fatalRecorder struct {
	testing.TB
	fatal string
}

func (r *fatalRecorder) Fatalf(format string, args ...any) {
	r.fatal = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func (r *fatalRecorder) Fatal(args ...any) {
	r.fatal = fmt.Sprint(args...)
	runtime.Goexit()
}

// A private broker restarts on its own port or fails its test, loudly, naming the port:
// when another broker answers there while it is stopped, its test never goes on against a
// cluster that is not its own.
func TestARestartedBrokerIsNeverAnother(t *testing.T) {
	b := StartBroker(t)
	b.Stop()
	startBrokerOn(t, b.port, "", nil) // another test's broker, on the stopped one's port
	rec := &fatalRecorder{TB: t}
	b.t = rec
	started := make(chan struct{})
	go func() {
		defer close(started)
		b.Start()
	}()
	<-started
	require.NotEmpty(t, rec.fatal, "the private broker started while another answered on %s", b.Bootstrap())
	require.Contains(t, rec.fatal, b.Bootstrap())
	t.Log(rec.fatal)
}
