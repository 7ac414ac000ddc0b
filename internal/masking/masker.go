package masking

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"
)

// Masker masks payloads by the configured rules. The zero of *Masker (nil) masks nothing.
type Masker struct {
	paths    [][]string
	headers  map[string]bool
	patterns []*regexp.Regexp
	key      []byte
}

// Enabled reports whether m masks anything.
func (m *Masker) Enabled() bool {
	return m != nil && len(m.paths)+len(m.headers)+len(m.patterns) > 0
}

// MasksValues reports whether m masks anything in record values (JSON paths or text
// patterns), as opposed to headers only.
func (m *Masker) MasksValues() bool {
	return m != nil && len(m.paths)+len(m.patterns) > 0
}

// placeholderSyntax finds placeholders in text; HashLen hex digits of the hash.
var placeholderSyntax = regexp.MustCompile(`\[masked:[0-9a-f]{16}\]`)

// HashLen is the length in hex digits of a placeholder's hash: 64 bits, enough that two
// different values of one field do not share a placeholder in practice.
const HashLen = 16

// Hash is the keyed hash of a clear value, as its placeholder shows it. A JSON string's
// value is hashed as its text, any other JSON value as written.
func (m *Masker) Hash(clear []byte) string {
	mac := hmac.New(sha256.New, m.key)
	mac.Write(clear)
	return hex.EncodeToString(mac.Sum(nil))[:HashLen]
}

// Placeholder is what shows in place of clear.
func (m *Masker) Placeholder(clear []byte) string { return "[masked:" + m.Hash(clear) + "]" }

// Header is one header of a record.
type Header struct {
	Key   string
	Value []byte
}

// Restore maps each placeholder, as it appears in a masked value or header value, to the
// clear bytes it stands for there; an edit made on the masked view gets its clear values
// back through it.
type Restore map[string][]byte

// Value masks one record value. A JSON value has the members of the paths replaced by
// placeholder strings, the rest byte for byte as stored; a text value that is not JSON has
// the patterns' matches replaced; anything else is returned as it is.
func (m *Masker) Value(v []byte, into Restore) []byte {
	if !m.Enabled() || v == nil {
		return v
	}
	if json.Valid(v) {
		if len(m.paths) == 0 {
			return v
		}
		return m.maskJSON(v, into)
	}
	if len(m.patterns) == 0 || !utf8.Valid(v) {
		return v
	}
	text := string(v)
	for _, re := range m.patterns {
		text = re.ReplaceAllStringFunc(text, func(clear string) string {
			if placeholderSyntax.MatchString(clear) && len(clear) == len("[masked:]")+HashLen {
				return clear // an earlier pattern's placeholder
			}
			p := m.Placeholder([]byte(clear))
			into[p] = []byte(clear)
			return p
		})
	}
	return []byte(text)
}

// Headers masks the values of the configured header names.
func (m *Masker) Headers(hs []Header, into Restore) []Header {
	if !m.Enabled() || len(m.headers) == 0 {
		return hs
	}
	out := make([]Header, len(hs))
	for i, h := range hs {
		out[i] = h
		if h.Value != nil && m.headers[strings.ToLower(h.Key)] {
			p := m.Placeholder(h.Value)
			into[p] = h.Value
			out[i].Value = []byte(p)
		}
	}
	return out
}

// Placeholders lists the placeholders written in b.
func Placeholders(b []byte) []string {
	return placeholderSyntax.FindAllString(string(b), -1)
}

// Pads are the HMAC's inner and outer padded keys: HMAC(m) = SHA-256(outer ‖ SHA-256(inner
// ‖ m)), which lets the database compute a field's hash with its own sha256 while the key
// itself never leaves dlq-admin.
func (m *Masker) Pads() (inner, outer []byte) {
	key := m.key
	if len(key) > sha256.BlockSize {
		sum := sha256.Sum256(key)
		key = sum[:]
	}
	inner, outer = make([]byte, sha256.BlockSize), make([]byte, sha256.BlockSize)
	copy(inner, key)
	copy(outer, key)
	for i := range inner {
		inner[i] ^= 0x36
		outer[i] ^= 0x5c
	}
	return inner, outer
}

// SearchPath is the path of a configured JSON rule given as text, if it is one that
// names a single member (no *): those are the fields a search can compare.
func (m *Masker) SearchPath(field string) ([]string, bool) {
	want, err := parsePath(field)
	if err != nil {
		return nil, false
	}
	for _, p := range m.paths {
		if slices.Equal(p, want) && !slices.Contains(p, "*") {
			return p, true
		}
	}
	return nil, false
}

// SearchHeader reports whether name is a masked header.
func (m *Masker) SearchHeader(name string) bool { return m.headers[strings.ToLower(name)] }
