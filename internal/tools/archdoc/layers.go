package main

import (
	"fmt"
	"slices"
	"strings"
)

// Layer is a group of packages; imports point from a layer to itself or to a layer below.
type Layer int

// The layers from the top down, then the packages kept apart from the drawing.
const (
	Binaries Layer = iota
	BinaryConfigs
	Components
	Shared
	Leaves
	Apart
)

var layerNames = map[Layer]string{
	Binaries:      "binaries",
	BinaryConfigs: "the binaries' configuration",
	Components:    "components",
	Shared:        "shared parts",
	Leaves:        "leaves",
	Apart:         "test helpers and tools",
}

func (l Layer) String() string { return layerNames[l] }

// componentPackages are the parts the binaries run: the redrive engine, the job runner and the
// worker's other loops, the admin API, its console and client, and the daemon frame. Every
// other package that imports the product is a shared part; one that imports none is a leaf.
// Naming them here is the one judgement the drawing needs: a name go list does not know
// fails the drawing, so the list cannot outlive a package.
var componentPackages = []string{
	"internal/adminclient",
	"internal/adminclient/oapi",
	"internal/api",
	"internal/audit",
	"internal/console",
	"internal/daemon",
	"internal/doctor",
	"internal/housekeeping",
	"internal/jobgauges",
	"internal/jobs",
	"internal/redrive",
}

// apart are packages of the tests, the benchmarks and make's tools: none of them is part of
// what ships, and nothing that ships imports them.
var apart = []string{"internal/procstat", "internal/soak", "scripts"}

// apartUnder are folders whose packages are all test helpers or tools.
var apartUnder = []string{"internal/testenv", "internal/tools"}

// Layered is a graph with each package's layer.
type Layered struct {
	*Graph
	Layer      map[string]Layer
	components []string
}

// Classify puts each package of g in its layer, components being the packages named.
func Classify(g *Graph, components []string) *Layered {
	l := &Layered{Graph: g, Layer: map[string]Layer{}, components: components}
	for path, p := range g.Packages {
		l.Layer[path] = layerOf(p, components)
	}
	return l
}

func layerOf(p *Package, components []string) Layer {
	switch {
	case isApart(p.Path):
		return Apart
	case p.Main:
		return Binaries
	case strings.HasPrefix(p.Path, "cmd/"):
		return BinaryConfigs
	case slices.Contains(components, p.Path):
		return Components
	case len(p.Imports) == 0:
		return Leaves
	default:
		return Shared
	}
}

// isApart: a test helper (a package named …test, as storetest), or a tool.
func isApart(path string) bool {
	if slices.Contains(apart, path) || strings.HasSuffix(path, "test") {
		return true
	}
	for _, dir := range apartUnder {
		if path == dir || strings.HasPrefix(path, dir+"/") {
			return true
		}
	}
	return false
}

// Violations are the imports that break the rules the architecture page states, one line
// each naming the importer, the imported package and the rule.
func (l *Layered) Violations() []string {
	var out []string
	for _, name := range l.components {
		if _, ok := l.Packages[name]; !ok {
			out = append(out, fmt.Sprintf("%s is listed as a component, and go list knows no such package", name))
		}
	}
	for _, path := range l.sorted() {
		from := l.Layer[path]
		for _, imp := range l.Packages[path].Imports {
			to := l.Layer[imp]
			switch {
			case path == "internal/config":
				out = append(out, fmt.Sprintf("internal/config imports %s: the configuration loader imports nothing of the product", imp))
			case isUnder(imp, "internal/redrive") && !within(path, "internal/redrive"):
				out = append(out, fmt.Sprintf("%s imports %s: nothing outside internal/redrive imports a package under it", path, imp))
			case from != Apart && isUnder(imp, "cmd") && !isUnder(path, "cmd"):
				out = append(out, fmt.Sprintf("%s imports %s: no component imports a binary or its configuration", path, imp))
			case from != Apart && to == Apart:
				out = append(out, fmt.Sprintf("%s imports %s: the product imports no test helper or tool", path, imp))
			case from != Apart && to < from:
				out = append(out, fmt.Sprintf("%s (%s) imports %s (%s): imports point to the same layer or a lower one", path, from, imp, to))
			}
		}
	}
	return out
}

// isUnder: path is a package strictly inside dir.
func isUnder(path, dir string) bool { return strings.HasPrefix(path, dir+"/") }

// within: path is dir's package or one inside it.
func within(path, dir string) bool { return path == dir || isUnder(path, dir) }

// sorted lists the packages by path.
func (l *Layered) sorted() []string {
	out := make([]string, 0, len(l.Packages))
	for path := range l.Packages {
		out = append(out, path)
	}
	slices.Sort(out)
	return out
}

// inLayer lists the packages of one layer by path.
func (l *Layered) inLayer(layer Layer) []string {
	var out []string
	for _, path := range l.sorted() {
		if l.Layer[path] == layer {
			out = append(out, path)
		}
	}
	return out
}
