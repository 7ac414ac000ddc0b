// Package editdiff says what a replay with edits changes in a record, line by line for
// the value and header by header, for an operator to read before it is sent (the CLI's
// replay, the console's confirmation) and after (the record's history).
package editdiff

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"strings"
	"unicode/utf8"
)

// Op marks a line or header as kept, removed, added or (headers) changed.
type Op string

const (
	Kept    Op = " "
	Removed Op = "-"
	Added   Op = "+"
	Changed Op = "~"
)

// Line is one line of a value's diff.
type Line struct {
	Op   Op
	Text string
}

// maxLines bounds the line diff, whose cost grows with the product of the two line
// counts: past it, the value is shown whole before and after.
const maxLines = 2000

// Value is the diff of a value, JSON indented first so that one changed member is one
// changed line; a value that is not text is compared as its base64. Nil when equal.
func Value(before, after []byte) []Line {
	if bytes.Equal(before, after) {
		return nil
	}
	return lines(split(before), split(after))
}

// Text is a value as the diff shows it: text when it is, else its base64.
func Text(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	return "base64:" + base64.StdEncoding.EncodeToString(b)
}

func split(b []byte) []string {
	var buf bytes.Buffer
	if json.Valid(b) && json.Indent(&buf, b, "", "  ") == nil {
		return strings.Split(buf.String(), "\n")
	}
	return strings.Split(Text(b), "\n")
}

// lines is a line diff of a and b by their longest common subsequence.
func lines(a, b []string) []Line {
	var out []Line
	if len(a)+len(b) > maxLines {
		for _, l := range a {
			out = append(out, Line{Removed, l})
		}
		for _, l := range b {
			out = append(out, Line{Added, l})
		}
		return out
	}
	// lcs[i][j] is the length of the longest common subsequence of a[i:] and b[j:].
	lcs := make([][]int, len(a)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	for i, j := 0, 0; i < len(a) || j < len(b); {
		switch {
		case i < len(a) && j < len(b) && a[i] == b[j]:
			out = append(out, Line{Kept, a[i]})
			i, j = i+1, j+1
		case i < len(a) && (j == len(b) || lcs[i+1][j] >= lcs[i][j+1]):
			out = append(out, Line{Removed, a[i]}) // removals first, as diff(1) writes them
			i++
		default:
			out = append(out, Line{Added, b[j]})
			j++
		}
	}
	return out
}

// Header is one header of a record or an edit; nil Value is a null one.
type Header struct {
	Key   string
	Value []byte
}

// HeaderChange is a header added, removed or changed, its values as Text shows them.
type HeaderChange struct {
	Op            Op
	Name          string
	Before, After string
}

// Headers lists the headers after adds, the ones before it leaves out and the ones whose
// value it changes, in the order of after then before.
func Headers(before, after []Header) []HeaderChange {
	old := map[string][]byte{}
	for _, h := range before {
		old[h.Key] = h.Value
	}
	kept := map[string]bool{}
	var out []HeaderChange
	for _, h := range after {
		kept[h.Key] = true
		v, ok := old[h.Key]
		switch {
		case !ok:
			out = append(out, HeaderChange{Op: Added, Name: h.Key, After: shown(h.Value)})
		case !bytes.Equal(v, h.Value) || (v == nil) != (h.Value == nil):
			out = append(out, HeaderChange{Op: Changed, Name: h.Key, Before: shown(v), After: shown(h.Value)})
		}
	}
	for _, h := range before {
		if !kept[h.Key] {
			out = append(out, HeaderChange{Op: Removed, Name: h.Key, Before: shown(h.Value)})
		}
	}
	return out
}

func shown(b []byte) string {
	if b == nil {
		return "(null)"
	}
	return Text(b)
}
