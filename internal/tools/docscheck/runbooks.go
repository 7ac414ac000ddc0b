package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
)

// The shipped alert rules, and the page whose headings are their runbooks.
const (
	alertRules   = "deploy/observability/alerts.yaml"
	runbookPage  = "docs/operating.md"
	runbookLevel = "### "
)

var alertName = regexp.MustCompile(`(?m)^\s*-\s*alert:\s*(\S+)\s*$`)

// missingRunbooks reports each shipped alert without a runbook: an on-call engineer paged
// by it finds what it means, what to look at and what to do under a heading of its name.
func missingRunbooks(root string, pages map[string]*page) ([]string, error) {
	rules, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(alertRules)))
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	p, ok := pages[runbookPage]
	if !ok {
		return []string{fmt.Sprintf("%s: missing, and %s ships alerts that need runbooks", runbookPage, alertRules)}, nil
	}
	var out []string
	for _, m := range alertName.FindAllSubmatch(rules, -1) {
		if name := string(m[1]); !p.anchors[slug(name)] {
			out = append(out, fmt.Sprintf("%s: alert %s has no runbook: add a heading %q%s to %s", alertRules, name, runbookLevel, name, runbookPage))
		}
	}
	return out, nil
}
