// Package lifecycle is the Start/Stop base of dlq's long-running parts (the redrive
// engine and its routes' helpers, the job runner, housekeeping): a work context that
// Stop cancels, goroutines started on it and tracked, and a Stop that cancels the work and
// waits for every goroutine, at most until its own context ends. A part whose work must outlive the
// binary's signal context (it stops gracefully after the signal) starts from
// context.WithoutCancel of it.
//
// Stop holds no lock while it waits, so a goroutine may call into its owner (report a
// fatal error, read its state) while its owner stops. Embed a Base, or keep one per group
// of goroutines that stop together.
package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// ErrStartedTwice is Start's answer after the first Start.
var ErrStartedTwice = errors.New("started twice")

// Base tracks the goroutines of one lifecycle. The zero value is ready; a Base is not
// restarted after Stop.
type Base struct {
	mu     sync.Mutex // guards the fields below; never held while waiting
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	done   chan struct{} // closed once every goroutine returned, after Stop
}

// Start makes the work context, a child of ctx that Stop cancels, and returns it.
func (b *Base) Start(ctx context.Context) (context.Context, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ctx != nil {
		return nil, ErrStartedTwice
	}
	b.ctx, b.cancel = context.WithCancel(ctx)
	return b.ctx, nil
}

// Go runs fn on a tracked goroutine with the work context. After Stop (or before Start)
// it does nothing and reports false.
func (b *Base) Go(fn func(ctx context.Context)) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ctx == nil || b.done != nil {
		return false
	}
	ctx := b.ctx
	b.wg.Go(func() { fn(ctx) })
	return true
}

// Stop cancels the work context and waits for every goroutine started by Go, at most
// until ctx ends; the goroutines then finish in the background and a later Stop waits for
// them again. Safe before Start and more than once.
func (b *Base) Stop(ctx context.Context) error {
	b.mu.Lock()
	if b.ctx == nil {
		b.mu.Unlock()
		return nil
	}
	if b.done == nil {
		b.done = make(chan struct{})
		done := b.done
		go func() {
			b.wg.Wait()
			close(done)
		}()
	}
	cancel, done := b.cancel, b.done
	b.mu.Unlock()
	cancel()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("still stopping when the shutdown grace ran out: %w", ctx.Err())
	}
}
