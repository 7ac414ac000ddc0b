package main

import (
	"fmt"
	"regexp"
	"strings"
)

// ordinal is a stage of development named by its rank ("the tenth session", "11th stage").
const ordinal = `(?:first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|eleventh|twelfth|` +
	`thirteenth|fourteenth|fifteenth|sixteenth|seventeenth|eighteenth|nineteenth|twentieth|\d+(?:st|nd|rd|th))`

// historyPatterns are the ways a page narrates its own development. Each is narrow enough
// that product text passes: a console session, a group's session timeout, "before the
// commit" and DLQ_BENCH_BEFORE_BIN are not history.
var historyPatterns = []struct {
	re   *regexp.Regexp
	says string
}{
	{regexp.MustCompile(`(?i)\b` + ordinal + `(?:'s)?\s+(?:session|stage|iteration)s?\b`), "a stage of development"},
	{regexp.MustCompile(`(?i)\b(?:this|that|last|previous|earlier|later) (?:session|stage)\b`), "a stage of development"},
	{regexp.MustCompile(`(?i)\bsession's (?:build|code|changes|figures|rounds|measurements)\b`), "a stage of development"},
	{regexp.MustCompile(`(?i)\bload averages?\b`), "a load average (give the machine, not the moment)"},
	{regexp.MustCompile(`\b\d{1,2}:\d{2}(?:\s*[–-]\s*\d{1,2}:\d{2})?\s*UTC\b`), "a dated narrative"},
	{regexp.MustCompile(`(?i)\bseed \d+`), "a seed number"},
	{regexp.MustCompile(`(?i)\bissue #?\d+`), "an issue number"},
	{regexp.MustCompile(`(?i)\bfinal code\b`), "a stage of development"},
	{regexp.MustCompile(`(?i)\bthe default (?:before|until)\b`), "a former default"},
	{regexp.MustCompile(`(?i)\b(?:before|after) (?:the|this|these|its) (?:fix|change|changes)\b`), "a before/after narrative"},
}

// Where test and benchmark names may appear: the table of claims and their tests, and the
// benchmarks' own page. Drafts under docs/pending/ carry their claim → test lists until
// they are folded in.
var (
	testName           = regexp.MustCompile(`\b(?:Test|Benchmark|Fuzz)[A-Z][A-Za-z0-9_]*`)
	testNamesAllowedIn = map[string]bool{"docs/development.md": true}
	benchNamesAllowed  = map[string]bool{"docs/development.md": true, "docs/benchmarks.md": true}
)

// testNames reports test names cited outside docs/development.md (benchmark names also
// in docs/benchmarks.md); code blocks and spans do not count, a `TestX` in backticks does.
func testNames(p *page) []string {
	if testNamesAllowedIn[p.name] || strings.HasPrefix(p.name, "docs/pending/") {
		return nil
	}
	var out []string
	for i, line := range p.codeSpans {
		for _, m := range testName.FindAllString(line, -1) {
			if strings.HasPrefix(m, "Benchmark") && benchNamesAllowed[p.name] {
				continue
			}
			out = append(out, fmt.Sprintf("%s:%d: %s: name the claim here and list its test in docs/development.md", p.name, i+1, m))
		}
	}
	return out
}

// historyWords reports each line of p's prose that narrates development.
func historyWords(p *page) []string {
	var out []string
	for i, line := range p.prose {
		for _, h := range historyPatterns {
			if m := h.re.FindString(line); m != "" {
				out = append(out, fmt.Sprintf("%s:%d: %q is %s: say what the product does today (history belongs in git log and CHANGELOG.md)", p.name, i+1, m, h.says))
			}
		}
	}
	return out
}
