package deadletter

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A failed DLQ publish waits by the engine's one backoff: RetryBackoff doubling up to 30 s.
func TestRetryWaitDoublesUpToThirtySeconds(t *testing.T) {
	p := retryPolicy(time.Second)
	require.NoError(t, p.Validate())
	require.Equal(t, time.Second, p.Delay(0, 0.5))
	require.Equal(t, 2*time.Second, p.Delay(1, 0.5))
	require.Equal(t, 16*time.Second, p.Delay(4, 0.5))
	require.Equal(t, 30*time.Second, p.Delay(5, 0.5))
	require.Equal(t, 30*time.Second, p.Delay(1<<30, 0.5))
	require.Equal(t, time.Minute, retryPolicy(time.Minute).Delay(3, 0.5), "a base above 30 s is not cut")
}
