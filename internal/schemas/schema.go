package schemas

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/hamba/avro/v2"
	"github.com/santhosh-tekuri/jsonschema/v5"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// schema is one registry schema, parsed for its format.
type schema struct {
	id         int
	format     string
	text       string
	subject    string
	version    int
	avro       avro.Schema
	protoFile  protoreflect.FileDescriptor
	jsonSchema *jsonschema.Schema
}

func (s *schema) decode(data []byte) (json.RawMessage, error) {
	switch s.format {
	case FormatAvro:
		return decodeAvro(s.avro, data)
	case FormatProtobuf:
		return decodeProtobuf(s.protoFile, data)
	default:
		return decodeJSONSchema(s.jsonSchema, data)
	}
}

// encode encodes doc; like is the data it replaces (Protobuf keeps its message).
func (s *schema) encode(like, doc []byte) ([]byte, error) {
	switch s.format {
	case FormatAvro:
		return encodeAvro(s.avro, doc)
	case FormatProtobuf:
		return encodeProtobuf(s.protoFile, like, doc)
	default:
		return encodeJSONSchema(s.jsonSchema, doc)
	}
}

func (s *schema) parseAvro(refs []reference) error {
	cache := &avro.SchemaCache{}
	for _, ref := range refs {
		if _, err := avro.ParseWithCache(ref.text, "", cache); err != nil {
			return fmt.Errorf("reference %q: %w", ref.name, err)
		}
	}
	parsed, err := avro.ParseWithCache(s.text, "", cache)
	s.avro = parsed
	return err
}

// FieldError is a JSON document that does not fit its schema: Path names the field
// ("address.zip", "items[2].sku"; empty for the document itself).
type FieldError struct {
	Path, Reason string
}

func (e *FieldError) Error() string {
	if e.Path == "" {
		return e.Reason
	}
	return e.Path + ": " + e.Reason
}

func fieldError(path, format string, args ...any) *FieldError {
	return &FieldError{Path: path, Reason: fmt.Sprintf(format, args...)}
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// parseJSON reads one JSON document, numbers kept exact.
func parseJSON(doc []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fieldError("", "is not JSON: %v", err)
	}
	if dec.More() {
		return nil, fieldError("", "is more than one JSON document")
	}
	return v, nil
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case json.Number:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}
