package main

import (
	"path/filepath"
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

// Without a writable temporary directory (a read-only root) the default identity cannot
// take its lock: the error says how to name the worker instead.
func TestGroupInstanceIDWithoutATemporaryDirectory(t *testing.T) {
	t.Setenv("TMPDIR", filepath.Join(t.TempDir(), "absent"))
	_, _, err := groupInstanceID("")
	require.ErrorContains(t, err, "group_instance_id: the default takes a lock file in the temporary directory")
	require.ErrorContains(t, err, "set it (DLQ_WORKER_GROUP_INSTANCE_ID) to a name stable for this worker and unique in its group")
	given, _, err := groupInstanceID("dlq-worker-0")
	require.NoError(t, err, "a named identity writes nothing")
	require.Equal(t, "dlq-worker-0", given)
}
