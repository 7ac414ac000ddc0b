package lifecycle_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/dlqops/dlq/internal/lifecycle"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The work context ends with Start's or with Stop, which waits for every goroutine; Stop
// is safe before Start and twice, and nothing starts after it.
func TestStartGoStop(t *testing.T) {
	var b lifecycle.Base
	require.NoError(t, b.Stop(context.Background()), "before Start")
	require.False(t, b.Go(func(context.Context) {}), "before Start")

	parent, cancelParent := context.WithCancel(context.Background())
	defer cancelParent()
	ctx, err := b.Start(parent)
	require.NoError(t, err)
	_, err = b.Start(parent)
	require.ErrorIs(t, err, lifecycle.ErrStartedTwice)
	var child lifecycle.Base
	childCtx, err := child.Start(ctx)
	require.NoError(t, err)

	var ended sync.WaitGroup
	ended.Add(2)
	for range 2 {
		require.True(t, b.Go(func(ctx context.Context) {
			defer ended.Done()
			<-ctx.Done()
		}))
	}
	require.NoError(t, b.Stop(context.Background()))
	ended.Wait()
	require.Error(t, ctx.Err())
	require.Error(t, childCtx.Err(), "a Base started from another's work ends with it")
	require.NoError(t, child.Stop(context.Background()))
	require.NoError(t, b.Stop(context.Background()), "twice")
	require.False(t, b.Go(func(context.Context) { t.Error("ran after Stop") }))
}

// Stop returns when its context ends even if a goroutine does not; a later Stop waits
// for it again.
func TestStopGraceRunsOut(t *testing.T) {
	var b lifecycle.Base
	_, err := b.Start(context.Background())
	require.NoError(t, err)
	release := make(chan struct{})
	b.Go(func(context.Context) { <-release }) // ignores the cancellation

	short, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	require.ErrorIs(t, b.Stop(short), context.DeadlineExceeded)
	close(release)
	require.NoError(t, b.Stop(context.Background()))
}

// No lock is held while Stop waits: a goroutine that calls into the Base while it is
// being stopped (here Go, as an owner's method would take its owner's lock) is not
// blocked by it.
func TestStopHoldsNoLockWhileWaiting(t *testing.T) {
	var b lifecycle.Base
	_, err := b.Start(context.Background())
	require.NoError(t, err)
	b.Go(func(ctx context.Context) {
		<-ctx.Done()
		if b.Go(func(context.Context) {}) {
			t.Error("stopping: nothing new starts")
		}
	})
	done := make(chan error, 1)
	go func() { done <- b.Stop(context.Background()) }()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(30 * time.Second):
		t.Fatal("Stop deadlocked with a goroutine calling into the Base")
	}
}
