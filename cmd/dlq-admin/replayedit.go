package main

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/dlqops/dlq/internal/api"
)

// editFlags are replay's edit flags: a new value from a file or stdin, headers set and
// headers dropped, applied to the record as the API shows it to the token (masked fields
// as placeholders, which the API puts back as they were stored).
type editFlags struct {
	value       string
	setHeaders  []string
	dropHeaders []string
}

func (e *editFlags) any() bool {
	return e.value != "" || len(e.setHeaders) > 0 || len(e.dropHeaders) > 0
}

// maxDiffLines bounds the line diff: past it, the value is shown whole before and after.
const maxDiffLines = 2000

// readValue reads --edit-value: @FILE or - for stdin.
func (e *editFlags) readValue(stdin io.Reader) ([]byte, error) {
	switch {
	case e.value == "-":
		return io.ReadAll(stdin)
	case strings.HasPrefix(e.value, "@"):
		return os.ReadFile(e.value[1:])
	}
	return nil, fmt.Errorf("--edit-value: %q is neither @FILE nor - (stdin)", e.value)
}

// apply builds the replay request's edit from the record as shown.
func (e *editFlags) apply(rec api.RecordDetail, req *api.ReplayRequest, stdin io.Reader) error {
	if e.value != "" {
		v, err := e.readValue(stdin)
		if err != nil {
			return err
		}
		req.Value = &api.Bytes{Base64: base64.StdEncoding.EncodeToString(v)}
	}
	if len(e.setHeaders) == 0 && len(e.dropHeaders) == 0 {
		return nil
	}
	hs := make([]api.Header, 0, len(rec.Headers))
	set := map[string]string{}
	var order []string
	for _, kv := range e.setHeaders {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return fmt.Errorf("--edit-header: %q is not name=value", kv)
		}
		if _, dup := set[k]; !dup {
			order = append(order, k)
		}
		set[k] = v
	}
	for _, h := range rec.Headers {
		switch v, ok := set[h.Key]; {
		case slices.Contains(e.dropHeaders, h.Key):
		case ok:
			hs = append(hs, api.Header{Key: h.Key, Value: api.Bytes{Base64: base64.StdEncoding.EncodeToString([]byte(v))}})
			delete(set, h.Key)
		default:
			hs = append(hs, h)
		}
	}
	for _, k := range order {
		if v, ok := set[k]; ok {
			hs = append(hs, api.Header{Key: k, Value: api.Bytes{Base64: base64.StdEncoding.EncodeToString([]byte(v))}})
		}
	}
	req.Headers = &hs
	return nil
}

// confirmEdit asks the operator on in to confirm the diff written to out.
func confirmEdit(in io.Reader, out io.Writer, id int64) error {
	fmt.Fprintf(out, "Replay record %d with these changes? [y/N] ", id)
	line, err := bufio.NewReader(in).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	if a := strings.ToLower(strings.TrimSpace(line)); a != "y" && a != "yes" {
		return errors.New("not replayed: not confirmed")
	}
	return nil
}

// writeEditDiff writes what the edit changes: the value line by line (JSON indented
// first, so that one changed member is one changed line) and each header added, removed
// or changed. A sender's text is written inert (printable).
func writeEditDiff(w io.Writer, rec api.RecordDetail, req api.ReplayRequest) {
	changed := false
	if req.Value != nil {
		before, after := bytesOf(rec.Value), bytesOf(*req.Value)
		if !bytes.Equal(before, after) {
			changed = true
			fmt.Fprintln(w, "value:")
			for _, l := range lineDiff(diffLines(before), diffLines(after)) {
				fmt.Fprintln(w, printable(l))
			}
		}
	}
	if req.Headers != nil {
		before := map[string][]byte{}
		for _, h := range rec.Headers {
			before[h.Key] = bytesOf(h.Value)
		}
		after := map[string]bool{}
		for _, h := range *req.Headers {
			after[h.Key] = true
			old, ok := before[h.Key]
			v := bytesOf(h.Value)
			switch {
			case !ok:
				changed = true
				fmt.Fprintf(w, "header + %s: %s\n", printable(h.Key), printable(shown(v)))
			case !bytes.Equal(old, v):
				changed = true
				fmt.Fprintf(w, "header ~ %s: %s -> %s\n", printable(h.Key), printable(shown(old)), printable(shown(v)))
			}
		}
		for _, h := range rec.Headers {
			if !after[h.Key] {
				changed = true
				fmt.Fprintf(w, "header - %s: %s\n", printable(h.Key), printable(shown(bytesOf(h.Value))))
			}
		}
	}
	if !changed {
		fmt.Fprintln(w, "no change: the record is replayed as stored")
	}
}

func bytesOf(b api.Bytes) []byte {
	if b.UTF8 != nil {
		return []byte(*b.UTF8)
	}
	v, _ := base64.StdEncoding.DecodeString(b.Base64)
	return v
}

// shown is a value as text when it is, else its base64.
func shown(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	return "base64:" + base64.StdEncoding.EncodeToString(b)
}

// diffLines is a value as the lines its diff compares: indented JSON, text, or base64.
func diffLines(b []byte) []string {
	var buf bytes.Buffer
	if json.Valid(b) && json.Indent(&buf, b, "", "  ") == nil {
		return strings.Split(buf.String(), "\n")
	}
	return strings.Split(shown(b), "\n")
}

// lineDiff is a line diff of a and b ("  " kept, "- " removed, "+ " added) by their
// longest common subsequence; past maxDiffLines, a removed whole and b added whole.
func lineDiff(a, b []string) []string {
	if len(a)+len(b) > maxDiffLines {
		var out []string
		for _, l := range a {
			out = append(out, "- "+l)
		}
		for _, l := range b {
			out = append(out, "+ "+l)
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
	var out []string
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case i < len(a) && j < len(b) && a[i] == b[j]:
			out = append(out, "  "+a[i])
			i, j = i+1, j+1
		case j < len(b) && (i == len(a) || lcs[i][j+1] >= lcs[i+1][j]):
			out = append(out, "+ "+b[j])
			j++
		default:
			out = append(out, "- "+a[i])
			i++
		}
	}
	return out
}
