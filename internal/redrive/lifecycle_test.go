package redrive

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/robfig/cron/v3"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/routes"
)

// The stall backoff is a backoff.Policy, the one backoff of the engine and the jobs.
func TestStallDelayDoublesUpToTheCap(t *testing.T) {
	require.NoError(t, stallBackoff.Validate())
	require.Equal(t, 200*time.Millisecond, stallDelay(0))
	require.Equal(t, 400*time.Millisecond, stallDelay(1))
	for n := range 100 {
		require.LessOrEqual(t, stallDelay(n), 30*time.Second, "after %d failures", n)
		require.LessOrEqual(t, stallDelay(n), stallDelay(n+1))
	}
	require.Equal(t, 25600*time.Millisecond, stallDelay(7))
	require.Equal(t, 30*time.Second, stallDelay(8))
	require.Equal(t, 30*time.Second, stallDelay(1<<30))
}

// The stall backoff of docs/semantics.md: the first transient failure waits 200 ms, each one after it
// twice as long, up to 30 s; a success starts again at 200 ms.
func TestStallWaitsStartAt200ms(t *testing.T) {
	errs := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "errors"}, []string{"route", "kind"})
	h := newHealth(zerolog.Nop(), "r", errs, nil)
	cause := errors.New("broker down")
	for _, want := range []time.Duration{200 * time.Millisecond, 400 * time.Millisecond, 800 * time.Millisecond} {
		require.Equal(t, want, h.stall("produce", cause, "x"))
	}
	h.unstall()
	require.Equal(t, 200*time.Millisecond, h.stall("produce", cause, "x"), "after a success")
}

// An outage is logged at WARN once per kind per warnInterval (10 s), each line with its
// kind and cause, however often the loop retries.
func TestStallWarnsOncePerKindPerInterval(t *testing.T) {
	var logs strings.Builder
	errs := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "errors"}, []string{"route", "kind"})
	h := newHealth(zerolog.New(&logs), "r", errs, nil)
	for range 5 {
		h.stall("store", errors.New("connection refused"), "cannot claim")
		h.stall("produce", errors.New("broker down"), "cannot produce")
	}
	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	require.Len(t, lines, 2, "%s", logs.String())
	require.Contains(t, lines[0], `"level":"warn","error":"connection refused","kind":"store"`)
	require.Contains(t, lines[1], `"level":"warn","error":"broker down","kind":"produce"`)
	require.Equal(t, 10*time.Second, warnInterval)
}

// A partition stalled after many failures is read again within the cap, like every other
// stall (it used to wait 200 ms << 8 = 51.2 s).
func TestRequeueReadWaitsAtMostTheCap(t *testing.T) {
	w := &walk{loopState: &loopState{run: &runState{}}, health: &health{stallN: 8}}

	w.requeueRead(&partition{})

	require.Len(t, w.run.stalledParts, 1)
	at := w.run.stalledParts[0].at
	require.False(t, at.After(time.Now().Add(30*time.Second)), "read again at %s, more than 30 s from now", at)
}

// Stop holds the engine's lock while it waits for the route loops; a loop that reports a
// fatal error meanwhile must not need that lock, or Stop waits out its whole grace.
func TestStopWhileALoopReportsAFatalError(t *testing.T) {
	e := &Engine{log: zerolog.Nop(), started: true, cron: cron.New()}
	stop, done := make(chan context.Context, 1), make(chan error, 1)
	e.workers = []*worker{{route: route{Config: routes.Config{Name: "r"}}}}
	e.stops, e.loops = []chan context.Context{stop}, []chan error{done}
	boom := errors.New("fatal producer error")
	go func() { // the route loop: it hits a fatal error as Stop comes
		<-stop
		e.fatal(boom)
		done <- boom
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	err := e.Stop(ctx)

	require.ErrorIs(t, err, boom)
	require.NotErrorIs(t, err, context.DeadlineExceeded, "Stop waited out its grace")
	require.ErrorIs(t, e.Err(), boom)
}
