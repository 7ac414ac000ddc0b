package main

import (
	"bytes"
	"fmt"
	"strings"
)

// drawn are the layers the graph shows, from the top down; the packages apart are listed
// in the table only.
var drawn = []Layer{Binaries, BinaryConfigs, Components, Shared, Leaves}

// tabled are the layers the table lists: the drawn ones, then the packages apart.
var tabled = []Layer{Binaries, BinaryConfigs, Components, Shared, Leaves, Apart}

// Render writes the layered graph as a Mermaid graph (GitHub draws it) followed by a
// table of every package, its layer and the packages of the product it imports directly.
func Render(l *Layered) []byte {
	var b bytes.Buffer
	b.WriteString("```mermaid\ngraph TD\n")
	for _, layer := range drawn {
		fmt.Fprintf(&b, "  subgraph %s[\"%s\"]\n", layerID(layer), layer)
		for _, path := range l.inLayer(layer) {
			fmt.Fprintf(&b, "    %s[\"%s\"]\n", nodeID(path), path)
		}
		b.WriteString("  end\n")
	}
	for _, layer := range drawn {
		for _, path := range l.inLayer(layer) {
			for _, imp := range l.Packages[path].Imports {
				fmt.Fprintf(&b, "  %s --> %s\n", nodeID(path), nodeID(imp))
			}
		}
	}
	b.WriteString("```\n\n")
	b.WriteString("| layer | package | imports of the product (directly) |\n| --- | --- | --- |\n")
	for _, layer := range tabled {
		for _, path := range l.inLayer(layer) {
			fmt.Fprintf(&b, "| %s | `%s` | %s |\n", layer, path, codeList(l.Packages[path].Imports))
		}
	}
	return b.Bytes()
}

// nodeID is a Mermaid node id for a package path: letters, digits and underscores.
func nodeID(path string) string {
	return "p_" + strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return '_'
	}, path)
}

func layerID(l Layer) string { return fmt.Sprintf("layer%d", int(l)) }

// codeList writes paths as code spans separated by commas, or a dash for none.
func codeList(paths []string) string {
	if len(paths) == 0 {
		return "–"
	}
	quoted := make([]string, len(paths))
	for i, p := range paths {
		quoted[i] = "`" + p + "`"
	}
	return strings.Join(quoted, ", ")
}

func joinLines(lines []string) string { return strings.Join(lines, "\n  ") }
