package main

import (
	"os"
	"runtime"
	"runtime/debug"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The worker collects garbage at memory_limit_mib, not each time its heap doubles; GOGC
// and GOMEMLIMIT in the environment each win over that.
func TestMemorySettingsCollectAtTheLimit(t *testing.T) {
	env := func(vars map[string]string) func(string) (string, bool) {
		return func(k string) (string, bool) { v, ok := vars[k]; return v, ok }
	}
	gc, limit := memorySettings(64, env(nil))
	require.Equal(t, -1, *gc, "GOGC off: only the limit triggers a collection")
	require.Equal(t, int64(64<<20), *limit)

	gc, limit = memorySettings(64, env(map[string]string{"GOGC": "100"}))
	require.Nil(t, gc, "GOGC in the environment wins")
	require.Equal(t, int64(64<<20), *limit)

	gc, limit = memorySettings(64, env(map[string]string{"GOMEMLIMIT": "1GiB"}))
	require.Equal(t, -1, *gc)
	require.Nil(t, limit, "GOMEMLIMIT in the environment wins")

	require.Equal(t, int64(64<<20), limitFor(64<<20, 10<<20), "a small live heap: the budget")
	require.Equal(t, int64(64<<20), limitFor(64<<20, 40<<20), "a burst of records in flight, up to three quarters of the budget live: the budget")
	require.Equal(t, int64(64<<20), limitFor(64<<20, 48<<20), "three quarters of the budget live: the budget")
	require.Equal(t, int64(100<<20), limitFor(64<<20, 50<<20), "more than three quarters of the budget live: twice the live heap")
}

// setMemory applies them to the runtime, and a live heap above three quarters of the budget raises the
// limit to twice its size after a collection, so that the collector does not run back to
// back (large records, a high max_in_flight).
func TestSetMemoryFollowsALargeLiveHeap(t *testing.T) {
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	require.NoError(t, os.Unsetenv("GOGC"))
	require.NoError(t, os.Unsetenv("GOMEMLIMIT"))
	gc, limit := debug.SetGCPercent(100), debug.SetMemoryLimit(-1)
	defer func() { debug.SetGCPercent(gc); debug.SetMemoryLimit(limit) }()

	const budget = 8 << 20
	stop := setMemory(budget >> 20)
	defer stop()
	require.Equal(t, -1, debug.SetGCPercent(-1))
	require.Equal(t, int64(budget), debug.SetMemoryLimit(-1))

	live := make([][]byte, 32) // 32 MiB live: four times the budget
	for i := range live {
		live[i] = make([]byte, 1<<20)
		live[i][0] = 1
	}
	require.Eventually(t, func() bool {
		runtime.GC()
		return debug.SetMemoryLimit(-1) >= 2*32<<20
	}, 30*time.Second, 10*time.Millisecond, "limit after collections with 32 MiB live: %d", debug.SetMemoryLimit(-1))
	runtime.KeepAlive(live)
}
