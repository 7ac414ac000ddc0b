package api

import (
	"encoding/base64"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/dlqops/dlq/internal/store"
)

// contentFromQuery reads the content searches of a listing's query into f.
func contentFromQuery(q url.Values, f *store.Filter) error {
	opt := func(name string) *string {
		if v, ok := q[name]; ok {
			return &v[0]
		}
		return nil
	}
	return readContent(f, "", opt("value_contains"), opt("value_contains_b64"), opt("key_contains"),
		q.Get("header"), opt("header_value_contains"))
}

// contentFromBody reads the content searches of a bulk request's filter into f.
func contentFromBody(in *Filter, f *store.Filter) error {
	if err := text("filter.header", in.Header); err != nil {
		return err
	}
	return readContent(f, "filter.", in.ValueContains, in.ValueContainsB64, in.KeyContains, in.Header, in.HeaderValueContains)
}

// readContent checks and converts the content searches, naming a wrong one by its field
// (prefix + name): not empty, at most store.MaxContainsBytes, valid base64.
func readContent(f *store.Filter, prefix string, value, valueB64, key *string, header string, headerValue *string) error {
	bytesOf := func(name string, v *string) ([]byte, error) {
		if v == nil {
			return nil, nil
		}
		if *v == "" || len(*v) > store.MaxContainsBytes {
			return nil, badParam(prefix+name, "from 1 to %d bytes", store.MaxContainsBytes)
		}
		return []byte(*v), nil
	}
	var err error
	switch {
	case value != nil && valueB64 != nil:
		return badParam(prefix+"value_contains_b64", "give value_contains (text) or value_contains_b64 (bytes in base64), not both")
	case valueB64 != nil:
		b, derr := base64.StdEncoding.DecodeString(*valueB64)
		if derr != nil || len(b) == 0 || len(b) > store.MaxContainsBytes {
			return badParam(prefix+"value_contains_b64", "must be standard base64 of 1 to %d bytes", store.MaxContainsBytes)
		}
		f.ValueContains = b
	default:
		if f.ValueContains, err = bytesOf("value_contains", value); err != nil {
			return err
		}
	}
	if f.KeyContains, err = bytesOf("key_contains", key); err != nil {
		return err
	}
	if f.HeaderValueContains, err = bytesOf("header_value_contains", headerValue); err != nil {
		return err
	}
	if f.HeaderValueContains != nil && header == "" {
		return badParam(prefix+"header_value_contains", "needs header: the name of the header to search")
	}
	f.Header = header
	return nil
}

// contentToWire writes the content searches of f into out as a caller could give them back:
// text when the bytes are text, base64 otherwise.
func contentToWire(f *store.Filter, out *Filter) {
	if f.ValueContains != nil {
		if v := string(f.ValueContains); utf8.ValidString(v) && !strings.ContainsRune(v, 0) {
			out.ValueContains = &v
		} else {
			b := base64.StdEncoding.EncodeToString(f.ValueContains)
			out.ValueContainsB64 = &b
		}
	}
	for _, c := range []struct {
		in  []byte
		out **string
	}{{f.KeyContains, &out.KeyContains}, {f.HeaderValueContains, &out.HeaderValueContains}} {
		if c.in != nil {
			v := string(c.in)
			*c.out = &v
		}
	}
	out.Header = f.Header
}
