package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// `make fail` passes the addresses `make dev` started the binaries on: the commands it
// prints reach that admin API and name that log, whatever the ports.
func TestNextStepsNameTheDevStacksAddresses(t *testing.T) {
	var out strings.Builder
	printNextSteps(&out, "orders.dlq", kinds{retrying: 5, exhausted: 3, unroutable: 2}, "http://127.0.0.1:18080", "/tmp/dev/dlq-worker.log")
	text := out.String()

	require.Contains(t, text, "Dead-lettered to orders.dlq: 5 orders that failed once, 3 that failed 5 times, 2 without an original topic.")
	require.Contains(t, text, "export DLQ_ADMIN_URL=http://127.0.0.1:18080 DLQ_ADMIN_TOKEN=dev-admin-token")
	require.Contains(t, text, "logs in /tmp/dev/dlq-worker.log")
	require.NotContains(t, text, ":8080")
}
