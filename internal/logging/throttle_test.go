package logging

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// One line of each kind per interval, whatever the callers' goroutines; the next line let
// through learns how many were held back.
func TestThrottleLetsOneLinePerKindAndInterval(t *testing.T) {
	th := NewThrottle(time.Hour)
	var wg sync.WaitGroup
	allowed := make(chan string, 200)
	for range 100 {
		for _, kind := range []string{"a", "b"} {
			wg.Go(func() {
				if _, ok := th.Allow(kind); ok {
					allowed <- kind
				}
			})
		}
	}
	wg.Wait()
	close(allowed)
	var got []string
	for k := range allowed {
		got = append(got, k)
	}
	require.ElementsMatch(t, []string{"a", "b"}, got)

	th.kinds["a"].last = time.Now().Add(-time.Hour) // the interval has passed for a
	n, ok := th.Allow("a")
	require.True(t, ok)
	require.Equal(t, 99, n, "the lines of a held back since the last one")
	_, ok = th.Allow("b")
	require.False(t, ok)
}
