package schemas

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v5"
)

// A JSON Schema payload is JSON already: decoding checks that it is, encoding validates
// the document against the schema first.

func (s *schema) parseJSONSchema(refs []reference) error {
	c := jsonschema.NewCompiler()
	for _, ref := range refs {
		if err := c.AddResource(ref.name, strings.NewReader(ref.text)); err != nil {
			return fmt.Errorf("reference %q: %w", ref.name, err)
		}
	}
	main := fmt.Sprintf("registry:///schemas/%d.json", s.id)
	if err := c.AddResource(main, strings.NewReader(s.text)); err != nil {
		return err
	}
	compiled, err := c.Compile(main)
	s.jsonSchema = compiled
	return err
}

func decodeJSONSchema(_ *jsonschema.Schema, data []byte) (json.RawMessage, error) {
	if !json.Valid(data) {
		return nil, errors.New("not JSON")
	}
	var out bytes.Buffer
	if err := json.Compact(&out, data); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

func encodeJSONSchema(s *jsonschema.Schema, doc []byte) ([]byte, error) {
	v, err := parseJSON(doc)
	if err != nil {
		return nil, fieldError("", "is not JSON: %v", err)
	}
	if err := s.Validate(v); err != nil {
		var ve *jsonschema.ValidationError
		if errors.As(err, &ve) {
			leaf := ve
			for len(leaf.Causes) > 0 {
				leaf = leaf.Causes[0]
			}
			return nil, fieldError(pointerPath(leaf.InstanceLocation), "%s", leaf.Message)
		}
		return nil, fieldError("", "%v", err)
	}
	var out bytes.Buffer
	if err := json.Compact(&out, doc); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// pointerPath turns a JSON pointer ("/items/2/sku") into the path form of FieldError
// ("items[2].sku").
func pointerPath(ptr string) string {
	var b strings.Builder
	for _, tok := range strings.Split(strings.TrimPrefix(ptr, "/"), "/") {
		if tok == "" {
			continue
		}
		tok = strings.NewReplacer("~1", "/", "~0", "~").Replace(tok)
		if isIndex(tok) {
			b.WriteString("[" + tok + "]")
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(tok)
	}
	return b.String()
}

func isIndex(tok string) bool {
	for _, r := range tok {
		if r < '0' || r > '9' {
			return false
		}
	}
	return tok != ""
}
