package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strings"
)

// Graph is the module's packages and, for each, the packages of the module it imports
// directly in its own code (its tests' imports aside), by path relative to the module.
type Graph struct {
	Module   string
	Packages map[string]*Package
}

// Package is one package of the module.
type Package struct {
	Path    string // relative to the module: internal/redrive
	Main    bool   // a command
	Imports []string
}

// listed is what List reads of each package from go list -json.
type listed struct {
	ImportPath string
	Name       string
	Imports    []string
}

// List runs go list over the module the working directory is in.
func List() (*Graph, error) {
	module, err := goList("-m")
	if err != nil {
		return nil, err
	}
	mod := strings.TrimSpace(string(module))
	out, err := goList("-json", mod+"/...")
	if err != nil {
		return nil, err
	}
	return parse(mod, out)
}

func goList(args ...string) ([]byte, error) {
	cmd := exec.Command("go", append([]string{"list"}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list %s: %w: %s", strings.Join(args, " "), err, stderr.String())
	}
	return out, nil
}

// parse reads go list -json's stream of package objects.
func parse(module string, stream []byte) (*Graph, error) {
	g := &Graph{Module: module, Packages: map[string]*Package{}}
	dec := json.NewDecoder(bytes.NewReader(stream))
	for {
		var p listed
		err := dec.Decode(&p)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("go list -json: %w", err)
		}
		rel, ok := relative(module, p.ImportPath)
		if !ok {
			continue
		}
		pkg := &Package{Path: rel, Main: p.Name == "main"}
		for _, imp := range p.Imports {
			if r, ok := relative(module, imp); ok {
				pkg.Imports = append(pkg.Imports, r)
			}
		}
		slices.Sort(pkg.Imports)
		g.Packages[rel] = pkg
	}
	if len(g.Packages) == 0 {
		return nil, fmt.Errorf("go list found no package of %s", module)
	}
	return g, nil
}

// relative is path within module, or false for a package outside it.
func relative(module, path string) (string, bool) {
	if path == module {
		return ".", true
	}
	rel, ok := strings.CutPrefix(path, module+"/")
	return rel, ok
}
