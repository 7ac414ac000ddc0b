package main

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// Two workers of one host get distinct ids; a worker that died frees its id for the next
// one, which is how a restart gets its partitions back at once.
func TestGroupInstanceIDSlots(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	first, releaseFirst, err := groupInstanceID("")
	require.NoError(t, err)
	second, releaseSecond, err := groupInstanceID("")
	require.NoError(t, err)
	defer releaseSecond()
	require.NotEqual(t, first, second)
	releaseFirst()
	again, releaseAgain, err := groupInstanceID("")
	require.NoError(t, err)
	defer releaseAgain()
	require.Equal(t, first, again)

	off, _, err := groupInstanceID("off")
	require.NoError(t, err)
	require.Empty(t, off)
	given, _, err := groupInstanceID("orders-worker-0")
	require.NoError(t, err)
	require.Equal(t, "orders-worker-0", given)
}
