package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"

	"github.com/dlqops/dlq/internal/tools/docsection"
)

// root is the module's directory.
func root(t *testing.T) string {
	t.Helper()
	c := newComments()
	dir, err := c.dir("github.com/dlqops/dlq")
	require.NoError(t, err)
	return dir
}

// The reference in docs/configuration.md is what the structs say today: a key added,
// renamed, given another default or comment fails here until `go generate ./...` runs.
func TestReferenceIsFresh(t *testing.T) {
	path := filepath.Join(root(t), "docs", "configuration.md")
	page, err := os.ReadFile(path)
	require.NoError(t, err)
	reference, err := Reference()
	require.NoError(t, err)
	want, err := docsection.Splice("configdoc", page, reference)
	require.NoError(t, err)
	require.Equal(t, string(want), string(page), "docs/configuration.md is stale (run go generate ./...)")
}

// Every key the example configurations set is in the reference, under its binary.
func TestEveryExampleKeyIsDocumented(t *testing.T) {
	docs := newComments()
	for _, bin := range binaries() {
		keys, err := Keys(bin, docs)
		require.NoError(t, err)
		documented := map[string]bool{}
		for _, k := range keys {
			documented[k.Path] = true
		}
		example := filepath.Join(root(t), "config", strings.TrimPrefix(bin.name, "dlq-")+".example.yaml")
		raw, err := os.ReadFile(example)
		require.NoError(t, err)
		var doc yaml.Node
		require.NoError(t, yaml.Unmarshal(raw, &doc))
		paths := keyPaths(doc.Content[0], "")
		require.NotEmpty(t, paths)
		for _, p := range paths {
			require.True(t, documented[p], "%s sets %s, which the reference of %s lacks", example, p, bin.name)
		}
	}
}

// keyPaths lists the keys a YAML document sets, list items as [] and the keys of
// free-form maps (kafka.extra's properties) left out.
func keyPaths(n *yaml.Node, prefix string) []string {
	var out []string
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			p, v := prefix+n.Content[i].Value, n.Content[i+1]
			if v.Kind != yaml.MappingNode || p == "kafka.extra" || p == "kafka.extra_files" {
				out = append(out, p) // a section (log:, http:) is checked through its keys
			}
			if p == "kafka.extra" || p == "kafka.extra_files" {
				continue
			}
			out = append(out, keyPaths(n.Content[i+1], p+".")...)
		}
	case yaml.SequenceNode:
		for _, c := range n.Content {
			out = append(out, keyPaths(c, strings.TrimSuffix(prefix, ".")+"[].")...)
		}
	}
	return out
}

func TestFormatDuration(t *testing.T) {
	for d, want := range map[string]string{"0s": "0", "30s": "30s", "1m": "1m", "90s": "1m30s", "1h": "1h",
		"24h": "24h", "36h": "36h", "48h": "2d", "720h": "30d", "8760h": "1y", "1.5s": "1.5s"} {
		require.Equal(t, want, formatDuration(mustDuration(t, d)), d)
	}
}

func TestWithoutSubject(t *testing.T) {
	for _, c := range []struct{ in, name, want string }{
		{"Level is one of a, b.", "Level", "one of a, b."},
		{"MaxRetries: a record is parked.", "MaxRetries", "a record is parked."},
		{"Extra holds properties.", "Extra", "holds properties."},
		{"TLSCertFile and TLSKeyFile serve", "TLSCertFile", "TLSCertFile and TLSKeyFile serve"},
		{"Listener settings.", "Listen", "Listener settings."},
		{"Something else.", "Level", "Something else."},
	} {
		require.Equal(t, c.want, withoutSubject(c.in, c.name), c.in)
	}
}

func mustDuration(t *testing.T, s string) (d time.Duration) {
	t.Helper()
	d, err := time.ParseDuration(s)
	require.NoError(t, err)
	return d
}
