// Command docscheck checks the Markdown documentation for `make lint`: every relative link
// (and its #anchor) resolves, the README stays within its budget, no page narrates how the
// product was developed (stages, dated narratives, load averages, seed or issue numbers),
// test names stay in docs/development.md's table of claims and their tests, and every
// shipped alert has a runbook in docs/operating.md: the docs
// describe the product as it is, and its history is in git log and CHANGELOG.md. It prints one line per finding, file:line first, and exits 1 on any.
package main

import (
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// readmeBudget is the README's size limit: a front door read in five minutes.
const readmeBudget = 15 * 1024

func main() {
	root := flag.String("root", ".", "the repository's directory")
	flag.Parse()
	findings, err := Check(*root)
	if err != nil {
		fmt.Fprintln(os.Stderr, "docscheck:", err)
		os.Exit(1)
	}
	for _, f := range findings {
		fmt.Println(f)
	}
	if len(findings) > 0 {
		fmt.Fprintf(os.Stderr, "docscheck: %d finding(s)\n", len(findings))
		os.Exit(1)
	}
}

// Check runs every check over the Markdown files under root.
func Check(root string) ([]string, error) {
	files, err := markdownFiles(root)
	if err != nil {
		return nil, err
	}
	pages := map[string]*page{}
	for _, f := range files {
		p, err := readPage(root, f)
		if err != nil {
			return nil, err
		}
		pages[f] = p
	}
	var findings []string
	for _, f := range files {
		p := pages[f]
		findings = append(findings, brokenLinks(root, p, pages)...)
		findings = append(findings, historyWords(p)...)
		findings = append(findings, testNames(p)...)
	}
	runbooks, err := missingRunbooks(root, pages)
	if err != nil {
		return nil, err
	}
	findings = append(findings, runbooks...)
	if p, ok := pages["README.md"]; ok && len(p.raw) > readmeBudget {
		findings = append(findings, fmt.Sprintf("README.md: %d bytes, over its budget of %d: move detail into docs/", len(p.raw), readmeBudget))
	}
	return findings, nil
}

// markdownFiles lists the .md files under root (slash-separated, relative), leaving out
// hidden directories, build output and test data.
func markdownFiles(root string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (strings.HasPrefix(name, ".") || name == "bin" || name == "testdata" || name == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(name, ".md") {
			rel, err := filepath.Rel(root, path)
			if err != nil {
				return err
			}
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	slices.Sort(out)
	return out, err
}
