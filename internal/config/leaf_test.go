package config

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The loader is a leaf: it imports nothing of the product, so every component can declare
// its settings beside it and load them without pulling in another component.
func TestLoaderImportsNothingOfTheProduct(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{join .Deps "\n"}}`, ".").CombinedOutput()
	require.NoError(t, err, "%s", out)
	for _, dep := range strings.Fields(string(out)) {
		require.False(t, strings.HasPrefix(dep, "github.com/dlqops/dlq/") || dep == "github.com/dlqops/dlq",
			"internal/config depends on %s", dep)
	}
}
