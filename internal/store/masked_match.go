package store

import "fmt"

// MaskedMatch selects the records whose masked field holds a value, by the keyed hash of
// that value (internal/masking): the database computes each record's hash from the HMAC's
// padded keys, so the key stays with dlq-admin. Never stored with a job: it holds the
// key's pads.
type MaskedMatch struct {
	// JSONPath names a member of JSON values; else Header names a header (any case).
	JSONPath []string
	Header   string
	// Hash is the hex prefix of the HMAC-SHA256 a placeholder shows.
	Hash string
	// Inner and Outer are the HMAC's padded keys.
	Inner, Outer []byte
}

// where renders m as one SQL condition after args, as Filter.where does.
func (m *MaskedMatch) where(args []any) (string, []any) {
	param := func(v any) string {
		args = append(args, v)
		return fmt.Sprintf("$%d", len(args))
	}
	inner, outer := param(m.Inner), param(m.Outer)
	hash := func(bytes string) string {
		return fmt.Sprintf("left(encode(sha256(%s::bytea || sha256(%s::bytea || %s)), 'hex'), %d)", outer, inner, bytes, len(m.Hash))
	}
	if m.Header != "" {
		name := param(m.Header)
		return fmt.Sprintf("EXISTS (SELECT 1 FROM unnest(header_keys, header_values) h(k, v) "+
			"WHERE lower(encode(h.k, 'escape')) = lower(%s::text) AND %s = %s::text)", name, hash("h.v"), param(m.Hash)), args
	}
	path := param(m.JSONPath)
	return fmt.Sprintf("%s = %s::text", hash(fmt.Sprintf("convert_to(dlq_json_member(value, %s::text[]), 'UTF8')", path)), param(m.Hash)), args
}
