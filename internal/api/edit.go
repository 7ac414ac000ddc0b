package api

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"

	"github.com/dlqops/dlq/internal/store"
)

// replayEdit reads the edited value and headers of a replay request; nil when it edits
// nothing.
func replayEdit(req *ReplayRequest) (*store.Edit, error) {
	if req.Value == nil && req.Headers == nil {
		return nil, nil
	}
	e := &store.Edit{}
	if req.Value != nil {
		v, err := fromBytes("value", *req.Value)
		if err != nil {
			return nil, err
		}
		e.ValueSet, e.Value = true, v
	}
	if req.Headers != nil {
		e.HeadersSet, e.Headers = true, make([]store.EditHeader, len(*req.Headers))
		for i, h := range *req.Headers {
			v, err := fromBytes(fmt.Sprintf("headers[%d].value", i), h.Value)
			if err != nil {
				return nil, err
			}
			e.Headers[i] = store.EditHeader{Key: h.Key, Value: v}
		}
	}
	return e, nil
}

// fromBytes reads a Bytes given by a client: null, base64, or (base64 empty) UTF-8 text.
func fromBytes(field string, b Bytes) ([]byte, error) {
	switch {
	case b.Null:
		return nil, nil
	case b.Base64 != "":
		v, err := base64.StdEncoding.DecodeString(b.Base64)
		if err != nil {
			return nil, badParam(field, "base64 must be standard base64")
		}
		return v, nil
	case b.UTF8 != nil:
		return []byte(*b.UTF8), nil
	}
	return []byte{}, nil
}

// editDiff says what an edit changes, for the audit row: the value's size and SHA-256
// prefix before and after, and the header names added, removed and changed.
func editDiff(rec *store.Record, e *store.Edit) string {
	var parts []string
	if e.ValueSet && (!bytes.Equal(rec.Value, e.Value) || (rec.Value == nil) != (e.Value == nil)) {
		parts = append(parts, fmt.Sprintf("value %s -> %s", describeBytes(rec.Value), describeBytes(e.Value)))
	}
	if e.HeadersSet {
		before := map[string][]byte{}
		for _, h := range rec.Headers {
			before[h.Key] = h.Value
		}
		after := map[string][]byte{}
		for _, h := range e.Headers {
			after[h.Key] = h.Value
		}
		var added, removed, changed []string
		for k, v := range after {
			old, ok := before[k]
			switch {
			case !ok:
				added = append(added, k)
			case !bytes.Equal(old, v) || (old == nil) != (v == nil):
				changed = append(changed, k)
			}
		}
		for k := range before {
			if _, ok := after[k]; !ok {
				removed = append(removed, k)
			}
		}
		for _, l := range []struct {
			name  string
			names []string
		}{{"added", added}, {"removed", removed}, {"changed", changed}} {
			if len(l.names) > 0 {
				slices.Sort(l.names)
				parts = append(parts, fmt.Sprintf("headers %s %q", l.name, l.names))
			}
		}
	}
	if len(parts) == 0 {
		return "edited: no change"
	}
	return "edited: " + strings.Join(parts, "; ")
}

func describeBytes(b []byte) string {
	if b == nil {
		return "null"
	}
	sum := sha256.Sum256(b)
	return fmt.Sprintf("%d bytes sha256:%s", len(b), hex.EncodeToString(sum[:6]))
}
