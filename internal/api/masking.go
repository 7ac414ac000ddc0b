package api

import (
	"encoding/json"
	"errors"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/dlqops/dlq/internal/masking"
	"github.com/dlqops/dlq/internal/store"
)

// masks is what the endpoints do with the masking settings beyond masking an answer:
// unmask one record (audited), restore an edit's masked fields, search by a masked value.
type masks struct {
	m     *masking.Masker
	audit *store.Store
	clock func() time.Time
}

// masked is r as a caller without unmask sees it: the configured fields of its value and
// headers replaced by placeholders, with what each placeholder stands for in restore (nil
// restore: the placeholders are not wanted). A nil masker masks nothing.
func masked(m *masking.Masker, r *store.Record, restore masking.Restore) store.Record {
	if !m.Enabled() {
		return *r
	}
	if restore == nil {
		restore = masking.Restore{}
	}
	out := *r
	out.Value = m.Value(r.Value, restore)
	hs := make([]masking.Header, len(r.Headers))
	for i, h := range r.Headers {
		hs[i] = masking.Header(h)
	}
	hs = m.Headers(hs, restore)
	out.Headers = make([]store.Header, len(hs))
	for i, h := range hs {
		out.Headers[i] = store.Header(h)
	}
	return out
}

// unmaskParam reads getRecord's unmask: true asks for the masked fields in clear, which
// needs the unmask permission for the record's topic and writes an audit row before the
// answer leaves.
func (mk *masks) unmaskParam(c *call, v string, rec *store.Record) (bool, error) {
	switch v {
	case "", "false":
		return false, nil
	case "true":
	default:
		return false, badParam("unmask", "must be true or false")
	}
	if !c.principal.MayUnmask(rec.Origin.Topic) {
		return false, probForbidden.with("reading masked fields in clear needs the unmask permission (tokens[].unmask)")
	}
	err := mk.audit.Audit(c.r.Context(), store.AuditEntry{At: mk.clock(), Actor: c.actor.Name,
		RequestID: c.actor.RequestID, ClientRequestID: c.actor.ClientRequestID, Action: "unmask_record",
		RecordIDs: []int64{rec.ID}, Affected: 1, Outcome: "ok"})
	return true, err
}

// restoreEdit puts back the clear values of the placeholders an editor kept from the
// masked view of rec, so that an edit made without unmask sends the stored values of the
// fields it could not see; a placeholder of no masked value of rec is refused.
func (mk *masks) restoreEdit(rec *store.Record, e *store.Edit) error {
	if e == nil || !mk.m.Enabled() {
		return nil
	}
	restore := masking.Restore{}
	masked(mk.m, rec, restore)
	fail := func(field string, err error) error {
		var unknown *masking.UnknownPlaceholderError
		if errors.As(err, &unknown) {
			return badParam(field, "%s", err.Error())
		}
		return err
	}
	var err error
	if e.ValueSet {
		if e.Value, err = restore.Apply(e.Value); err != nil {
			return fail("value", err)
		}
	}
	for i := range e.Headers {
		if e.Headers[i].Value, err = restore.Apply(e.Headers[i].Value); err != nil {
			return fail("headers", err)
		}
	}
	return nil
}

// restoreJSON puts back the clear values of the placeholders a value_json edit kept from
// the masked decoded view (d, the registry's reading of the stored value), so that the
// fields an editor could not see are encoded as stored, never as placeholder text.
func (mk *masks) restoreJSON(d *Decoded, doc json.RawMessage) (json.RawMessage, error) {
	if !mk.m.Enabled() {
		return doc, nil
	}
	restore := masking.Restore{}
	if d != nil && len(d.JSON) > 0 {
		mk.m.Value(d.JSON, restore)
	}
	out, err := restore.Apply(doc)
	var unknown *masking.UnknownPlaceholderError
	if errors.As(err, &unknown) {
		return nil, badParam("value_json", "%s", err.Error())
	}
	return out, err
}

// contentSearch refuses a search by content that could read masked values back: a
// substring search over the stored clear bytes answers "is the card number 4111…?" one
// guess at a time. Callers without unmask search masked fields by exact match only
// (masked_field), which compares keyed hashes.
func (mk *masks) contentSearch(c *call, f *store.Filter) error {
	if c.principal.Unmask {
		return nil
	}
	refuse := func(field string) error {
		p := probForbidden.with("a search by content where fields are masked needs the unmask permission (tokens[].unmask); " +
			"search a masked field by exact match with masked_field and masked_value")
		p.Field = field
		return p
	}
	switch {
	case len(f.ValueContains) > 0 && mk.m.MasksValues():
		return refuse("value_contains")
	case len(f.HeaderValueContains) > 0 && mk.m.Enabled() && mk.m.SearchHeader(f.Header):
		return refuse("header_value_contains")
	}
	return nil
}

// maskedMatch reads a listing's search by a masked field: masked_field names a JSON rule
// without * or header:<name> of a header rule, and masked_value (the clear value, hashed
// here) or masked_hash (as a placeholder shows it) what it must hold.
func (mk *masks) maskedMatch(q url.Values) (*store.MaskedMatch, error) {
	field, value, hash := q.Get("masked_field"), q["masked_value"], q.Get("masked_hash")
	m := mk.m
	switch {
	case field == "" && value == nil && hash == "":
		return nil, nil
	case field == "":
		return nil, badParam("masked_field", "required with masked_value or masked_hash")
	case !m.Enabled():
		return nil, badParam("masked_field", "no field is masked (masking in the configuration)")
	case (value == nil) == (hash == ""):
		return nil, badParam("masked_value", "give masked_value or masked_hash, not both")
	}
	out := &store.MaskedMatch{Hash: hash}
	if value != nil {
		out.Hash = m.Hash([]byte(value[0]))
	} else if !validHash.MatchString(hash) {
		return nil, badParam("masked_hash", "%d lowercase hex digits, as a placeholder [masked:<hash>] shows them", masking.HashLen)
	}
	if name, ok := strings.CutPrefix(field, "header:"); ok {
		if !m.SearchHeader(name) {
			return nil, badParam("masked_field", "%q is not a masked header (masking.headers)", name)
		}
		out.Header = name
	} else if out.JSONPath, ok = m.SearchPath(field); !ok {
		return nil, badParam("masked_field", "%q is not a JSON path of the masking settings without * (masking.json_paths), "+
			"nor header:<name> of a masked header", field)
	}
	out.Inner, out.Outer = m.Pads()
	return out, nil
}

var validHash = regexp.MustCompile(`^[0-9a-f]{16}$`)

// toAuditEdit is what a replay with edits sent, masked by m as a record's payload is.
func toAuditEdit(e *store.Edit, m *masking.Masker) *AuditEdit {
	if e == nil {
		return nil
	}
	view := masked(m, &store.Record{NewRecord: store.NewRecord{Value: e.Value, Headers: editHeaders(e.Headers)}}, nil)
	out := &AuditEdit{}
	if e.ValueSet {
		v := toBytes(view.Value)
		out.Value = &v
	}
	if e.HeadersSet {
		hs := make([]Header, len(view.Headers))
		for i, h := range view.Headers {
			hs[i] = Header{Key: h.Key, Value: toBytes(h.Value)}
		}
		out.Headers = &hs
	}
	return out
}

func editHeaders(hs []store.EditHeader) []store.Header {
	out := make([]store.Header, len(hs))
	for i, h := range hs {
		out[i] = store.Header(h)
	}
	return out
}
