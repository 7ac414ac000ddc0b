package main

import (
	"bufio"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/dlqops/dlq/internal/api"
	"github.com/dlqops/dlq/internal/editdiff"
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

// writeEditDiff writes what the edit changes (editdiff), a sender's text written inert
// (printable).
func writeEditDiff(w io.Writer, rec api.RecordDetail, req api.ReplayRequest) {
	changed := false
	if req.Value != nil {
		if lines := editdiff.Value(bytesOf(rec.Value), bytesOf(*req.Value)); lines != nil {
			changed = true
			fmt.Fprintln(w, "value:")
			for _, l := range lines {
				fmt.Fprintf(w, "%s %s\n", l.Op, printable(l.Text))
			}
		}
	}
	if req.Headers != nil {
		for _, c := range editdiff.Headers(diffHeaders(rec.Headers), diffHeaders(*req.Headers)) {
			changed = true
			switch c.Op {
			case editdiff.Added:
				fmt.Fprintf(w, "header + %s: %s\n", printable(c.Name), printable(c.After))
			case editdiff.Removed:
				fmt.Fprintf(w, "header - %s: %s\n", printable(c.Name), printable(c.Before))
			default:
				fmt.Fprintf(w, "header ~ %s: %s -> %s\n", printable(c.Name), printable(c.Before), printable(c.After))
			}
		}
	}
	if !changed {
		fmt.Fprintln(w, "no change: the record is replayed as stored")
	}
}

func diffHeaders(hs []api.Header) []editdiff.Header {
	out := make([]editdiff.Header, len(hs))
	for i, h := range hs {
		out[i] = editdiff.Header{Key: h.Key}
		if !h.Value.Null {
			out[i].Value = bytesOf(h.Value)
		}
	}
	return out
}

func bytesOf(b api.Bytes) []byte {
	if b.UTF8 != nil {
		return []byte(*b.UTF8)
	}
	v, _ := base64.StdEncoding.DecodeString(b.Base64)
	return v
}
