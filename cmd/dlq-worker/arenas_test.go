package main

import (
	"os"
	"os/exec"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/testenv/cmalloc"
)

// The worker caps glibc's malloc arenas at one: threads that allocate at the same time
// share the main arena (glibc would give each an arena of its own, up to eight per core).
// MALLOC_ARENA_MAX in the environment wins: run again with 4, the same threads make 4.
func TestMallocArenasCappedAtOneUnlessTheEnvironmentSaysOtherwise(t *testing.T) {
	const threads = 12
	if v := os.Getenv("MALLOC_ARENA_MAX"); v != "" {
		want, err := strconv.Atoi(v)
		require.NoError(t, err)
		require.NoError(t, cmalloc.ThreadsMalloc(threads))
		require.Equal(t, want, cmalloc.Arenas(), "arenas with MALLOC_ARENA_MAX=%s", v)
		return
	}
	require.NoError(t, cmalloc.ThreadsMalloc(threads))
	require.Equal(t, 1, cmalloc.Arenas(), "arenas after %d threads allocated at once", threads)

	cmd := exec.Command(os.Args[0], "-test.run=^"+t.Name()+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), "MALLOC_ARENA_MAX=4")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "with MALLOC_ARENA_MAX=4:\n%s", out)
}
