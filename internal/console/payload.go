package console

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"unicode"
	"unicode/utf8"

	"github.com/dlqops/dlq/internal/api"
)

// payload is how a key, value or header value is shown. Text is always rendered through
// html/template, so whatever the bytes say stays text.
type payload struct {
	Null bool
	Size int
	// Kind is "json" (pretty-printed), "text", "hex" (a hex dump) or "empty".
	Kind string
	Text string
	// SchemaID is set for the Confluent Schema Registry wire format: magic byte 0, then a
	// 4-byte big-endian schema id, then the serialized data (shown after those 5 bytes).
	SchemaID *uint32
	// Decoded is the registry's reading of wire-format bytes, when a registry is
	// configured.
	Decoded *decodedView
}

// decodedView is what the record page shows of a decoded key or value: the format and
// schema above the JSON, or why it did not decode above the hex dump.
type decodedView struct {
	Format, Subject, Error string
	Version                int
	// Schema is the schema's text, pretty-printed when it is JSON (Avro, JSON Schema).
	Schema string
}

// payloadBlock is a payload with its heading, for the record page's template.
type payloadBlock struct {
	Title, ID string
	P         payload
}

func decodeBytes(b api.Bytes) []byte {
	if b.Null {
		return nil
	}
	raw, err := base64.StdEncoding.DecodeString(b.Base64)
	if err != nil {
		return nil // the API always sends standard base64
	}
	return raw
}

// viewPayload shows a key or value: the registry's decoding as pretty JSON when there is
// one, else pretty JSON when it parses, text when it is printable UTF-8, a hex dump
// otherwise.
func viewPayload(b api.Bytes, dec *api.Decoded) payload {
	raw := decodeBytes(b)
	p := payload{Null: b.Null, Size: len(raw)}
	if p.Null {
		return p
	}
	if len(raw) >= 5 && raw[0] == 0 {
		id := binary.BigEndian.Uint32(raw[1:5])
		p.SchemaID = &id
		raw = raw[5:]
	}
	p.Kind, p.Text = describe(raw)
	if dec != nil {
		p.Decoded = &decodedView{Format: string(dec.Format), Subject: dec.Subject, Version: dec.Version, Error: dec.Error}
		p.Decoded.Schema = dec.Schema
		if kind, pretty := describe([]byte(dec.Schema)); kind == "json" {
			p.Decoded.Schema = pretty
		}
		if len(dec.JSON) > 0 {
			p.Kind, p.Text = describe(dec.JSON)
		}
	}
	return p
}

func describe(raw []byte) (kind, text string) {
	switch {
	case len(raw) == 0:
		return "empty", ""
	case json.Valid(raw):
		var buf bytes.Buffer
		if err := json.Indent(&buf, raw, "", "  "); err == nil {
			return "json", buf.String()
		}
	case printable(raw):
		return "text", string(raw)
	}
	return "hex", hex.Dump(raw)
}

// printable reports whether raw is UTF-8 text without control characters other than
// tab and line breaks.
func printable(raw []byte) bool {
	if !utf8.Valid(raw) {
		return false
	}
	for _, r := range string(raw) {
		if unicode.IsControl(r) && r != '\n' && r != '\r' && r != '\t' {
			return false
		}
	}
	return true
}

// headerRow is one header: its name and value each as text when printable, else hex.
type headerRow struct {
	Name, NameHex string
	Null          bool
	Value         string
	ValueHex      bool
	// Number is a 4- or 8-byte value that is not text read as a big-endian integer.
	Number string
	// FirstLine and Lines fold a value of several lines (a stack trace) behind its first.
	FirstLine string
	Lines     int
}

func viewHeaders(hs []api.Header) []headerRow {
	out := make([]headerRow, len(hs))
	for i, h := range hs {
		row := headerRow{Null: h.Value.Null}
		if printable([]byte(h.Key)) {
			row.Name = h.Key
		} else {
			row.NameHex = hex.EncodeToString([]byte(h.Key))
		}
		if v := decodeBytes(h.Value); !row.Null {
			if printable(v) {
				row.Value = string(v)
				row.FirstLine, row.Lines = foldLines(row.Value)
			} else {
				row.Value, row.ValueHex = hex.EncodeToString(v), true
				row.Number, _ = bigEndianNumber(v)
			}
		}
		out[i] = row
	}
	return out
}
