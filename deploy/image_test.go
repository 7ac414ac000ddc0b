package deploy

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/daemon"
)

// imageHealthcheck is the argv of the Dockerfile's HEALTHCHECK (exec form: the image has
// no shell) and its start period.
func imageHealthcheck(t *testing.T) (argv []string, startPeriod time.Duration) {
	t.Helper()
	raw, err := os.ReadFile("../Dockerfile")
	require.NoError(t, err)
	text := strings.ReplaceAll(string(raw), "\\\n", " ")
	m := regexp.MustCompile(`(?m)^HEALTHCHECK (.*?)CMD (\[.*\])\s*$`).FindStringSubmatch(text)
	require.NotNil(t, m, "the Dockerfile has no HEALTHCHECK in exec form")
	require.NoError(t, json.Unmarshal([]byte(m[2]), &argv), "HEALTHCHECK CMD %s", m[2])
	if sp := regexp.MustCompile(`--start-period=(\S+)`).FindStringSubmatch(m[1]); sp != nil {
		startPeriod, err = time.ParseDuration(sp[1])
		require.NoError(t, err)
	}
	return argv, startPeriod
}

// The image checks its own health with the binary's health subcommand, giving a
// migrating binary the time it may take; the pod run executes that very command in the
// worker's container (TestChartPodsRunAsKubernetesRunsThem).
func TestImageHealthcheck(t *testing.T) {
	argv, startPeriod := imageHealthcheck(t)
	require.Equal(t, []string{"dlq-worker", "health", "--config", "/etc/dlq/worker.yaml"}, argv)
	require.Greater(t, startPeriod, daemon.MigrateTimeout, "the HEALTHCHECK counts failures while migrate_on_start may still run")
}

// The build context leaves out the repository's history: it would grow the context and
// change it at every commit.
func TestDockerignoreLeavesOutGit(t *testing.T) {
	raw, err := os.ReadFile("../.dockerignore")
	require.NoError(t, err)
	require.Contains(t, strings.Fields(string(raw)), ".git")
}
