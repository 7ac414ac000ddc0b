package kafkaclient_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Building a Kafka handle from its settings needs neither the admin API nor the
// PostgreSQL store: the library, the audit and the tools that talk to Kafka link only
// what they use.
func TestKafkaClientNeedsNoAPINorStore(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	require.NoError(t, err, "%s", out)
	deps := strings.Fields(string(out))
	require.Contains(t, deps, "github.com/confluentinc/confluent-kafka-go/v2/kafka", "the listing is the real one")
	for _, dep := range deps {
		for _, heavy := range []string{"github.com/dlqops/dlq/internal/api", "github.com/dlqops/dlq/internal/store", "github.com/dlqops/dlq/migrations"} {
			require.False(t, dep == heavy || strings.HasPrefix(dep, heavy+"/"), "internal/kafkaclient depends on %s", dep)
		}
	}
}
