package main

import (
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/tools/docsection"
)

// The drawing in docs/architecture.md is what go list reports today: a package added or an
// import added or dropped fails here until `go generate ./internal/tools/archdoc/` runs,
// and a graph that breaks the page's rules fails the drawing itself.
func TestDrawingIsFresh(t *testing.T) {
	root, err := goList("-m", "-f", "{{.Dir}}")
	require.NoError(t, err)
	path := filepath.Join(strings.TrimSpace(string(root)), "docs", "architecture.md")
	page, err := os.ReadFile(path)
	require.NoError(t, err)
	drawing, err := Drawing()
	require.NoError(t, err)
	want, err := docsection.Splice("archdoc", page, drawing)
	require.NoError(t, err)
	require.Equal(t, string(want), string(page), "docs/architecture.md is stale (run go generate ./internal/tools/archdoc/)")
}

// fixture is a small module laid out as the product is: two binaries, a binary's
// configuration, a component, a shared part, leaves, a part of the engine's own and a test
// helper.
func fixture() *Graph {
	return graph(map[string][]string{
		"cmd/worker":               {"cmd/worker/workerconfig", "internal/redrive", "internal/store"},
		"cmd/worker/workerconfig":  {"internal/config", "internal/redrive"},
		"internal/redrive":         {"internal/redrive/tracker", "internal/headers", "internal/store"},
		"internal/redrive/tracker": nil,
		"internal/store":           {"internal/headers"},
		"internal/headers":         nil,
		"internal/config":          nil,
		"internal/store/storetest": {"internal/store"},
		"internal/tools/gen":       {"cmd/worker/workerconfig"},
	}, "cmd/worker", "internal/tools/gen")
}

func graph(imports map[string][]string, mains ...string) *Graph {
	g := &Graph{Module: "example.com/m", Packages: map[string]*Package{}}
	for path, imps := range imports {
		g.Packages[path] = &Package{Path: path, Main: slices.Contains(mains, path), Imports: slices.Sorted(slices.Values(imps))}
	}
	return g
}

func TestLayers(t *testing.T) {
	l := Classify(fixture(), []string{"internal/redrive"})
	require.Equal(t, map[string]Layer{
		"cmd/worker":               Binaries,
		"cmd/worker/workerconfig":  BinaryConfigs,
		"internal/redrive":         Components,
		"internal/redrive/tracker": Leaves,
		"internal/store":           Shared,
		"internal/headers":         Leaves,
		"internal/config":          Leaves,
		"internal/store/storetest": Apart,
		"internal/tools/gen":       Apart,
	}, l.Layer)
}

var (
	tableRow = regexp.MustCompile("^\\| ([^|]+) \\| `([^`]+)` \\| (.*) \\|$")
	edge     = regexp.MustCompile(`^  (p_\w+) --> (p_\w+)$`)
	node     = regexp.MustCompile(`^    (p_\w+)\["([^"]+)"\]$`)
)

// What the drawing says, read back, is the graph: each package's row lists exactly its
// imports and its layer, the Mermaid graph draws exactly the imports between the packages
// that ship, and the test helpers and tools are in the table only.
func TestDrawingFollowsImports(t *testing.T) {
	g := fixture()
	l := Classify(g, []string{"internal/redrive"})
	require.Empty(t, l.Violations())
	out := string(Render(l))

	rows := map[string][]string{}
	nodes := map[string]string{}
	var edges [][2]string
	for _, line := range strings.Split(out, "\n") {
		if m := tableRow.FindStringSubmatch(line); m != nil {
			require.Equal(t, l.Layer[m[2]].String(), m[1], "layer of %s", m[2])
			var imps []string
			if m[3] != "–" {
				for _, s := range strings.Split(m[3], ", ") {
					imps = append(imps, strings.Trim(s, "`"))
				}
			}
			rows[m[2]] = imps
		}
		if m := node.FindStringSubmatch(line); m != nil {
			nodes[m[1]] = m[2]
		}
		if m := edge.FindStringSubmatch(line); m != nil {
			edges = append(edges, [2]string{nodes[m[1]], nodes[m[2]]})
		}
	}
	var wantEdges [][2]string
	for path, p := range g.Packages {
		require.Contains(t, rows, path)
		require.Equal(t, p.Imports, rows[path], "imports of %s", path)
		if l.Layer[path] == Apart {
			require.NotContains(t, slices.Collect(maps.Values(nodes)), path, "%s is drawn", path)
			continue
		}
		for _, imp := range p.Imports {
			wantEdges = append(wantEdges, [2]string{path, imp})
		}
	}
	require.Len(t, rows, len(g.Packages))
	require.ElementsMatch(t, wantEdges, edges)
}

// Each rule the architecture page states is refused when an import breaks it, naming the
// import; the fixture as it is breaks none.
func TestViolations(t *testing.T) {
	for _, c := range []struct {
		name       string
		from, to   string
		components []string
		says       string
	}{
		{"the loader imports the product", "internal/config", "internal/headers", nil, "internal/config imports internal/headers: the configuration loader imports nothing"},
		{"the engine's own part imported from outside", "internal/store", "internal/redrive/tracker", nil, "internal/store imports internal/redrive/tracker: nothing outside internal/redrive"},
		{"a component imports a binary's configuration", "internal/redrive", "cmd/worker/workerconfig", nil, "internal/redrive imports cmd/worker/workerconfig: no component imports a binary"},
		{"the product imports a test helper", "internal/redrive", "internal/store/storetest", nil, "internal/redrive imports internal/store/storetest: the product imports no test helper"},
		{"an import points up", "internal/store", "internal/redrive", nil, "internal/store (shared parts) imports internal/redrive (components): imports point to the same layer or a lower one"},
		{"a component go list does not know", "", "", []string{"internal/gone"}, "internal/gone is listed as a component, and go list knows no such package"},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := fixture()
			if c.from != "" {
				p := g.Packages[c.from]
				p.Imports = append(p.Imports, c.to)
			}
			l := Classify(g, append([]string{"internal/redrive"}, c.components...))
			found := l.Violations()
			require.Len(t, found, 1, "%q", found)
			require.Contains(t, found[0], c.says)
		})
	}
}

// parse keeps the module's packages and their imports of the module, relative to it, and
// tells commands apart.
func TestParse(t *testing.T) {
	stream := `{"ImportPath":"example.com/m/cmd/w","Name":"main","Imports":["example.com/m/internal/b","fmt","example.com/other/x"]}
{"ImportPath":"example.com/m/internal/b","Name":"b"}
{"ImportPath":"example.com/mother/z","Name":"z"}`
	g, err := parse("example.com/m", []byte(stream))
	require.NoError(t, err)
	require.Equal(t, map[string]*Package{
		"cmd/w":      {Path: "cmd/w", Main: true, Imports: []string{"internal/b"}},
		"internal/b": {Path: "internal/b"},
	}, g.Packages)
}
