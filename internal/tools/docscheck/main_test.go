package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func write(t *testing.T, root, name, body string) {
	t.Helper()
	p := filepath.Join(root, filepath.FromSlash(name))
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
}

// Each kind of finding, and none for the product text that looks like them.
func TestCheckFindsBrokenLinksHistoryAndSize(t *testing.T) {
	root := t.TempDir()
	write(t, root, "docs/p.md", "# P\n\n## Here and there\n\n## Here and there\n\n[back](../README.md#a-b)\n")
	write(t, root, "docs/development.md", "# D\n\n| claim | `TestKillNineMidRun` | BenchmarkWorker |\n")
	write(t, root, "docs/benchmarks.md", "# B\n\n`BenchmarkWorker`\n")
	write(t, root, "docs/pending/i99.md", "# Pending\n\n- a claim → `TestSomething`\n")
	write(t, root, "deploy/observability/alerts.yaml", "groups:\n  - name: dlq\n    rules:\n      - alert: DLQWorkerDown\n        expr: up == 0\n      - alert: DLQNew\n        expr: x > 0\n")
	write(t, root, "docs/operating.md", "# Operating\n\n## Alerts\n\n### DLQWorkerDown\n\nMeans, look at, do.\n")
	write(t, root, "README.md", strings.Join([]string{
		"# T", "", "## A b", "",
		"[ok](docs/p.md#here-and-there) [dup](docs/p.md#here-and-there-1) [self](#a-b) [web](https://example.com/x.md)",
		"[gone](docs/p.md#nope) [missing](missing.md) `[code](no.md)`",
		"```", "[in a block](nowhere.md) the tenth session", "```",
		"The tenth session at 05:51 UTC, load average 3; seed 003 and issue 17.",
		"A session cookie, a group session, the session's CSRF token, before the commit, DLQ_BENCH_BEFORE_BIN, 2 y.",
		"Proven by `TestKillNineMidRun`, measured by BenchmarkWorker; Testing and Tests are words.",
		strings.Repeat("x", readmeBudget),
	}, "\n"))
	findings, err := Check(root)
	require.NoError(t, err)
	want := []string{
		"README.md:6: link to docs/p.md#nope: docs/p.md has no heading #nope",
		"README.md:6: link to missing.md: missing.md does not exist",
		`README.md:10: "tenth session" is a stage of development`,
		`README.md:10: "05:51 UTC" is a dated narrative`,
		`README.md:10: "load average" is a load average`,
		`README.md:10: "seed 003" is a seed number`,
		`README.md:10: "issue 17" is an issue number`,
		"README.md:12: TestKillNineMidRun: name the claim here",
		"README.md:12: BenchmarkWorker: name the claim here",
		"README.md: 15863 bytes, over its budget of 15360",
		"deploy/observability/alerts.yaml: alert DLQNew has no runbook",
	}
	require.Len(t, findings, len(want), "findings: %q", findings)
	for _, w := range want {
		require.True(t, slices.ContainsFunc(findings, func(f string) bool { return strings.HasPrefix(f, w) }),
			"no finding %q in %q", w, findings)
	}
}

func TestSlug(t *testing.T) {
	for title, want := range map[string]string{
		"Kubernetes (Helm chart `deploy/helm/dlq`)":                     "kubernetes-helm-chart-deployhelmdlq",
		"Publish failures from your services: the `deadletter` library": "publish-failures-from-your-services-the-deadletter-library",
		"DLQWorkerDown":                     "dlqworkerdown",
		"Claims and their tests":            "claims-and-their-tests",
		"Headers and other systems' DLQs":   "headers-and-other-systems-dlqs",
		"Redrive, replay: what's promised?": "redrive-replay-whats-promised",
	} {
		require.Equal(t, want, slug(title), title)
	}
}

// The repository's own docs pass, so that `make test` holds them to it as `make lint` does.
func TestRepositoryDocsPass(t *testing.T) {
	root, err := filepath.Abs("../../..")
	require.NoError(t, err)
	require.FileExists(t, filepath.Join(root, "go.mod"))
	findings, err := Check(root)
	require.NoError(t, err)
	require.Empty(t, findings)
}
