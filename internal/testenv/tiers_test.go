package testenv_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/testenv"
)

// The tests look for the stack's jars and builds where scripts/stack.sh keeps them:
// DLQ_CACHE_DIR when set, the repository's .cache otherwise.
func TestCacheDirFollowsDLQCacheDir(t *testing.T) {
	elsewhere := t.TempDir()
	t.Setenv("DLQ_CACHE_DIR", elsewhere)
	require.Equal(t, elsewhere, testenv.CacheDir(t))

	t.Setenv("DLQ_CACHE_DIR", "")
	root := testenv.RepoRoot(t)
	_, err := os.Stat(filepath.Join(root, "go.mod"))
	require.NoError(t, err)
	require.Equal(t, filepath.Join(root, ".cache"), testenv.CacheDir(t))
}
