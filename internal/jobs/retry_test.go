package jobs

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A job's records that failed for a transient cause are produced again after 250 ms,
// doubling up to 10 s, each wait ±20 % (docs/semantics.md's figures).
func TestRetryBackoff(t *testing.T) {
	require.Equal(t, 250*time.Millisecond, retryBackoff.Delay(0, 0.5))
	require.Equal(t, 200*time.Millisecond, retryBackoff.Delay(0, 0))
	require.Equal(t, 300*time.Millisecond, retryBackoff.Delay(0, 1))
	require.Equal(t, 500*time.Millisecond, retryBackoff.Delay(1, 0.5))
	require.Equal(t, 10*time.Second, retryBackoff.Delay(6, 0.5), "capped")
	require.Equal(t, 10*time.Second, retryBackoff.Delay(6, 1), "never past the cap")
	require.Equal(t, 8*time.Second, retryBackoff.Delay(6, 0))
}
