package franzredrive_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/dlqops/dlq/internal/testenv"
)

// The prototype stays out of the product: neither binary links franz-go.
func TestProductBinariesDoNotLinkFranzGo(t *testing.T) {
	t.Parallel()
	cmd := exec.Command("go", "list", "-deps", "./cmd/dlq-worker", "./cmd/dlq-admin")
	cmd.Dir = testenv.RepoRoot(t)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 100 {
		t.Fatalf("go list -deps listed %d packages: not the binaries' dependencies?\n%s", len(deps), out)
	}
	for _, pkg := range deps {
		if strings.HasPrefix(pkg, "github.com/twmb/franz-go") || strings.HasPrefix(pkg, "github.com/dlqops/dlq/internal/prototype") {
			t.Errorf("a product binary links %s", pkg)
		}
	}
}
