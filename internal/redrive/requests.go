// Run requests: RunNow, the schedule and the operators' controls ask the loop for a run
// from goroutines of their own; the loop answers each request on its reply channel.

package redrive

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"

	"github.com/rs/zerolog"
)

// runRequests hands run requests to the loop goroutine and holds the route's operator
// pause. trigger and runOnce are called from any goroutine (RunNow's, the schedule's,
// the controls goroutine's); runMu, running and paused are safe from any goroutine; the
// loop goroutine receives on runReq and reads paused.
type runRequests struct {
	log     zerolog.Logger
	runReq  chan chan error
	runMu   sync.Mutex // held while a run is requested or running
	running atomic.Bool
	paused  atomic.Bool
}

// trigger starts a run unless one is in progress, logging the outcome.
func (w *runRequests) trigger(ctx context.Context, why string) {
	err := w.runOnce(ctx)
	switch {
	case err == nil:
	case errors.Is(err, errRunBusy), errors.Is(err, errRunPaused):
		w.log.Info().Str("trigger", why).Msg("run skipped: " + err.Error())
	case errors.Is(err, ErrRunInterrupted):
		w.log.Info().Str("trigger", why).Msg("run interrupted; the next one continues from its commits")
	case ctx.Err() != nil:
	default:
		w.log.Warn().Err(err).Str("trigger", why).Msg("run failed; the next trigger retries")
	}
}

func (w *runRequests) runOnce(ctx context.Context) error {
	if !w.runMu.TryLock() {
		return errRunBusy
	}
	defer w.runMu.Unlock()
	w.running.Store(true)
	defer w.running.Store(false)
	reply := make(chan error, 1)
	select {
	case w.runReq <- reply:
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-reply:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}
