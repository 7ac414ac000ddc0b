package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"
)

// checkStrictJSON refuses what encoding/json would quietly accept in a body meant for
// dst: text that is not UTF-8 (it would become U+FFFD, and an audit reason would no
// longer be what was sent), a key given twice (the last would win) and a key that is a
// field's name in other letter case (it would match the field). Each refusal names the
// field. Syntax errors are left to the decoder, which reports them.
func checkStrictJSON(raw []byte, dst any) error {
	w := &jsonWalk{dec: json.NewDecoder(bytes.NewReader(raw)), raw: raw}
	w.dec.UseNumber()
	err := w.value("", reflect.TypeOf(dst))
	var p *Problem
	if errors.As(err, &p) {
		return p
	}
	return nil
}

// jsonWalk reads a body token by token, beside the Go type each value is decoded into.
type jsonWalk struct {
	dec  *json.Decoder
	raw  []byte
	last int64
}

// token reads the next token and checks that its bytes in the body are UTF-8.
func (w *jsonWalk) token(field string) (json.Token, error) {
	tok, err := w.dec.Token()
	if err != nil {
		return nil, err
	}
	end := w.dec.InputOffset()
	if !utf8.Valid(w.raw[w.last:end]) {
		return nil, badParam(fieldOrBody(field), "not valid UTF-8")
	}
	w.last = end
	return tok, nil
}

func fieldOrBody(field string) string {
	if field == "" {
		return "body"
	}
	return field
}

// value walks one value at field, to be decoded into t (nil when unknown).
func (w *jsonWalk) value(field string, t reflect.Type) error {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	tok, err := w.token(field)
	if err != nil {
		return err
	}
	switch tok {
	case json.Delim('{'):
		return w.object(field, t)
	case json.Delim('['):
		var elem reflect.Type
		if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
			elem = t.Elem()
		}
		for i := 0; w.dec.More(); i++ {
			if err := w.value(field+"["+strconv.Itoa(i)+"]", elem); err != nil {
				return err
			}
		}
		_, err = w.token(field)
		return err
	}
	return nil
}

// object walks the members of an object after its '{'.
func (w *jsonWalk) object(field string, t reflect.Type) error {
	fields := jsonFields(t)
	seen := map[string]string{} // lower case → as given
	for w.dec.More() {
		tok, err := w.token(field)
		if err != nil {
			return err
		}
		key, _ := tok.(string)
		name := key
		if field != "" {
			name = field + "." + key
		}
		lower := strings.ToLower(key)
		if prev, dup := seen[lower]; dup {
			if prev == key {
				return badParam(name, "given twice")
			}
			return badParam(name, "given twice, as %q and %q (keys are case-sensitive)", prev, key)
		}
		seen[lower] = key
		var ft reflect.Type
		if fields != nil {
			var known bool
			if ft, known = fields[key]; !known {
				for k := range fields {
					if strings.EqualFold(k, key) {
						return badParam(name, "unknown field; keys are case-sensitive: did you mean %q?", k)
					}
				}
			}
		} else if t != nil && t.Kind() == reflect.Map {
			ft = t.Elem()
		}
		if err := w.value(name, ft); err != nil {
			return err
		}
	}
	_, err := w.token(field)
	return err
}

// jsonFields maps the JSON names of struct t's fields to their types; nil when t is not
// a struct decoded from an object.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	if t == nil || t.Kind() != reflect.Struct {
		return nil
	}
	out := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch name {
		case "-":
			continue
		case "":
			name = f.Name
		}
		out[name] = f.Type
	}
	return out
}
