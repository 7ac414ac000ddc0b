package config

import (
	"bytes"
	"cmp"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Durations in the configuration also take days and years (`90d`, `2y`, `1y30d`, `1d12h`),
// which is how retention is thought of; Go's time.ParseDuration stops at hours. A day is
// 24h and a year 365 days.

var durationType = reflect.TypeOf(time.Duration(0))

// daysAndYears matches a duration that starts with years and/or days, then an optional
// Go duration for the rest.
var daysAndYears = regexp.MustCompile(`^([-+]?)(?:(\d+)y)?(?:(\d+)d)?([0-9.].*)?$`)

// expandDays rewrites the years and days of s into hours, so that time.ParseDuration
// (through yaml.v3) reads it: `2y` is `17520h`, `1d12h` is `24h12h`, which Go adds up.
// A value without years or days is returned as it is.
func expandDays(s string) string {
	m := daysAndYears.FindStringSubmatch(strings.TrimSpace(s))
	if m == nil || m[2] == "" && m[3] == "" {
		return s
	}
	years, _ := strconv.ParseInt(m[2], 10, 64) // digits only, empty is 0
	days, _ := strconv.ParseInt(m[3], 10, 64)
	hours := years*365*24 + days*24
	if hours/24 < years*365 || hours < 0 { // overflow: let the parser refuse it
		return s
	}
	return m[1] + strconv.FormatInt(hours, 10) + "h" + m[4]
}

// expandDurationsInFile rewrites, in the YAML text, every value that decodes into a
// time.Duration of dst and carries days or years. The replacement stays on its line, so
// the line numbers of the decoder's errors still point at the user's keys.
func expandDurationsInFile(raw []byte, dst any) []byte {
	var root yaml.Node
	if yaml.Unmarshal(raw, &root) != nil {
		return raw // the decoder reports the syntax error
	}
	lines := bytes.Split(raw, []byte("\n"))
	// Edits are applied right to left, so that two on one line (a flow mapping) each
	// find their column.
	type edit struct {
		line, at      int
		token, expand string
	}
	var edits []edit
	visitDurations(&root, reflect.TypeOf(dst), func(n *yaml.Node) {
		expanded := expandDays(n.Value)
		if expanded == n.Value || n.Line < 1 || n.Line > len(lines) || n.Column < 1 {
			return
		}
		switch n.Style {
		case 0, yaml.FlowStyle:
			edits = append(edits, edit{n.Line - 1, n.Column - 1, n.Value, expanded})
		case yaml.DoubleQuotedStyle:
			edits = append(edits, edit{n.Line - 1, n.Column - 1, `"` + n.Value + `"`, expanded})
		case yaml.SingleQuotedStyle:
			edits = append(edits, edit{n.Line - 1, n.Column - 1, `'` + n.Value + `'`, expanded})
		}
	})
	slices.SortFunc(edits, func(a, b edit) int { return cmp.Or(cmp.Compare(a.line, b.line), cmp.Compare(b.at, a.at)) })
	for _, e := range edits {
		line := lines[e.line]
		if e.at > len(line) || !bytes.HasPrefix(line[e.at:], []byte(e.token)) {
			continue // not the text the node was read from: leave it to the decoder
		}
		lines[e.line] = append(append(append([]byte{}, line[:e.at]...), e.expand...), line[e.at+len(e.token):]...)
	}
	return bytes.Join(lines, []byte("\n"))
}

// visitDurations calls visit for each scalar node that decodes into a time.Duration of t.
func visitDurations(n *yaml.Node, t reflect.Type, visit func(*yaml.Node)) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case n.Kind == yaml.DocumentNode:
		for _, c := range n.Content {
			visitDurations(c, t, visit)
		}
	case t == durationType:
		if n.Kind == yaml.ScalarNode {
			visit(n)
		}
	case n.Kind == yaml.MappingNode && t.Kind() == reflect.Struct:
		for i := 0; i+1 < len(n.Content); i += 2 {
			if f, ok := fieldByYAMLName(t, n.Content[i].Value); ok {
				visitDurations(n.Content[i+1], f.Type, visit)
			}
		}
	case n.Kind == yaml.MappingNode && t.Kind() == reflect.Map:
		for i := 1; i < len(n.Content); i += 2 {
			visitDurations(n.Content[i], t.Elem(), visit)
		}
	case n.Kind == yaml.SequenceNode && t.Kind() == reflect.Slice:
		for _, c := range n.Content {
			visitDurations(c, t.Elem(), visit)
		}
	}
}

// fieldByYAMLName finds the exported field of struct type t whose yaml tag names key.
func fieldByYAMLName(t reflect.Type, key string) (reflect.StructField, bool) {
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if f.IsExported() && name == key {
			return f, true
		}
	}
	return reflect.StructField{}, false
}
