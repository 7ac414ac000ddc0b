package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/dlqops/dlq/internal/masking"
	"github.com/dlqops/dlq/internal/schemas"
	"github.com/dlqops/dlq/internal/store"
)

// probSchemaMismatch: value_json cannot be encoded as the record's value: it does not fit
// the record's schema (the field says where), or there is no schema to encode it with.
var probSchemaMismatch = Problem{Type: typePrefix + "schema-mismatch", Status: http.StatusUnprocessableEntity,
	Title: "Replay refused: value_json does not fit the record's schema", outcome: "schema_mismatch"}

// decoding reads and writes record payloads through the Schema Registry (nil registry:
// none is configured).
type decoding struct{ registry *schemas.Registry }

// decoded is the registry's reading of a key or value; nil without a registry or for
// bytes outside the wire format. Built where the record's representation is built, so
// whatever applies to that representation applies to the decoded fields too.
func (s decoding) decoded(b []byte) *Decoded {
	if s.registry == nil {
		return nil
	}
	d := s.registry.Decode(b)
	if d == nil {
		return nil
	}
	return &Decoded{Format: DecodedFormat(d.Format), SchemaID: d.SchemaID, Subject: d.Subject, Version: d.Version,
		Schema: d.Schema, JSON: d.JSON, Error: d.Error}
}

// withDecoded adds the decoded key and value to a record's representation, their JSON
// masked by m's paths as a JSON payload's are (nil m: in clear), so that a field hidden in
// a JSON record stays hidden when the same field comes through Avro or Protobuf. The bytes
// of such a key or value would still show the field (an Avro string is written as its
// text), so they become the masked JSON encoded under the same schema id, or are withheld
// (empty) when a placeholder does not fit the field's type.
func (s decoding) withDecoded(out *RecordDetail, rec *store.Record, m *masking.Masker) {
	out.KeyDecoded, out.ValueDecoded = s.decoded(rec.Key), s.decoded(rec.Value)
	s.maskDecoded(out.KeyDecoded, rec.Key, &out.Key, m)
	s.maskDecoded(out.ValueDecoded, rec.Value, &out.Value, m)
}

// maskDecoded masks d's JSON by m's paths and, when that hid something, replaces the
// bytes shown beside it (raw: as stored) by the masked JSON encoded like raw.
func (s decoding) maskDecoded(d *Decoded, raw []byte, shown *Bytes, m *masking.Masker) {
	if d == nil || len(d.JSON) == 0 || !m.Enabled() {
		return
	}
	clear := d.JSON
	d.JSON = m.Value(clear, masking.Restore{})
	if bytes.Equal(clear, d.JSON) {
		return
	}
	if b, err := s.registry.Encode(raw, d.JSON); err == nil {
		*shown = toBytes(b)
	} else {
		*shown = Bytes{}
		d.Error = "the bytes are withheld: a masked field's placeholder does not fit its type in the schema"
	}
}

// valueFromJSON encodes an operator's JSON as the record's value: under the schema id
// (and Protobuf message) of the value it replaces.
// version, when not 0, is another version of the value's subject to encode under.
func (s decoding) valueFromJSON(rec *store.Record, doc json.RawMessage, version int) ([]byte, error) {
	refuse := func(field, detail string) *Problem {
		p := probSchemaMismatch.with(detail)
		p.Field = field
		return p
	}
	if s.registry == nil {
		return nil, refuse("value_json", "no schema_registry is configured: give the value as bytes")
	}
	var out []byte
	var err error
	if version != 0 {
		out, err = s.registry.EncodeVersion(rec.Value, doc, version)
	} else {
		out, err = s.registry.Encode(rec.Value, doc)
	}
	var fe *schemas.FieldError
	switch {
	case err == nil:
		return out, nil
	case errors.As(err, &fe):
		field := "value_json"
		if fe.Path != "" {
			field += "." + fe.Path
		}
		return nil, refuse(field, fe.Error())
	case errors.Is(err, schemas.ErrNotWireFormat):
		return nil, refuse("value_json", "the record's value is not in the Schema Registry wire format: give the value as bytes")
	case errors.Is(err, schemas.ErrUnknownSchema):
		return nil, refuse("value_json", err.Error())
	case errors.Is(err, schemas.ErrNoSuchVersion):
		return nil, refuse("value_schema_version", err.Error())
	}
	return nil, err
}

// auditJSON is the edited JSON as the audit row shows it: compact, and cut at a length
// an audit row keeps readable.
func auditJSON(doc json.RawMessage) string {
	const maxAuditJSON = 2000
	var b bytes.Buffer
	if err := json.Compact(&b, doc); err != nil {
		return "(not JSON)"
	}
	if b.Len() > maxAuditJSON {
		return string(bytes.ToValidUTF8(b.Bytes()[:maxAuditJSON], nil)) + "…"
	}
	return b.String()
}
