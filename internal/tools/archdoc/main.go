// Command archdoc draws the product's packages and the direction of their imports into
// docs/architecture.md, between its generated-section markers: the packages grouped in
// layers, a Mermaid graph of their direct imports and the same as a table, with the test
// helpers and tools apart. The imports come from `go list`, so the drawing follows the
// code: `go generate ./...` after adding a package or an import, and `make lint` (-check)
// fails until then. It also refuses a graph that breaks the layering the page states.
package main

import (
	"errors"

	"github.com/dlqops/dlq/internal/tools/docsection"
)

func main() {
	docsection.Main("archdoc", "docs/architecture.md", Drawing)
}

// Drawing lists the module's packages with go list, checks the layering and renders it.
func Drawing() ([]byte, error) {
	g, err := List()
	if err != nil {
		return nil, err
	}
	layered := Classify(g, componentPackages)
	if broken := layered.Violations(); len(broken) > 0 {
		return nil, errors.New("the imports break the layering:\n  " + joinLines(broken))
	}
	return Render(layered), nil
}
