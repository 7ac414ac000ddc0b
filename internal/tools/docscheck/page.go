package main

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"unicode"
)

// page is a Markdown file: its prose lines (code blocks and code spans blanked, so that
// neither their links nor their words count) and the anchors of its headings.
type page struct {
	name    string // slash-separated, relative to the root
	raw     []byte
	prose   []string
	anchors map[string]bool
	// codeSpans are the lines outside code blocks as written, code spans included (where
	// test names are cited).
	codeSpans []string
}

var (
	fence   = regexp.MustCompile("^\\s*(```|~~~)")
	span    = regexp.MustCompile("`[^`]*`")
	heading = regexp.MustCompile(`^#{1,6}\s+(.*?)\s*#*\s*$`)
	link    = regexp.MustCompile(`\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
)

func readPage(root, name string) (*page, error) {
	raw, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(name)))
	if err != nil {
		return nil, err
	}
	p := &page{name: name, raw: raw, anchors: map[string]bool{}}
	seen := map[string]int{}
	inCode := false
	for _, line := range strings.Split(string(raw), "\n") {
		if fence.MatchString(line) {
			inCode = !inCode
			p.prose, p.codeSpans = append(p.prose, ""), append(p.codeSpans, "")
			continue
		}
		if inCode {
			p.prose, p.codeSpans = append(p.prose, ""), append(p.codeSpans, "")
			continue
		}
		p.codeSpans = append(p.codeSpans, line)
		if m := heading.FindStringSubmatch(line); m != nil {
			a := slug(m[1])
			if n := seen[a]; n > 0 {
				p.anchors[fmt.Sprintf("%s-%d", a, n)] = true
			} else {
				p.anchors[a] = true
			}
			seen[a]++
		}
		p.prose = append(p.prose, span.ReplaceAllString(line, "``"))
	}
	return p, nil
}

// slug is the anchor GitHub gives a heading: lower case, punctuation dropped, spaces as
// hyphens.
func slug(title string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(title) {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteRune('-')
		}
	}
	return b.String()
}

// brokenLinks reports the relative links of p whose file, or #anchor in a page, does not
// exist.
func brokenLinks(root string, p *page, pages map[string]*page) []string {
	var out []string
	for i, line := range p.prose {
		for _, m := range link.FindAllStringSubmatch(line, -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file, anchor, _ := strings.Cut(target, "#")
			resolved := p.name
			if file != "" {
				resolved = path.Clean(path.Join(path.Dir(p.name), file))
				if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(resolved))); err != nil {
					out = append(out, fmt.Sprintf("%s:%d: link to %s: %s does not exist", p.name, i+1, target, resolved))
					continue
				}
			}
			if anchor == "" {
				continue
			}
			if q, ok := pages[resolved]; ok && !q.anchors[anchor] {
				out = append(out, fmt.Sprintf("%s:%d: link to %s: %s has no heading #%s", p.name, i+1, target, resolved, anchor))
			}
		}
	}
	return out
}
