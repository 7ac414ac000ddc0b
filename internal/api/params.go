package api

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/dlqops/dlq/internal/reltime"
	"github.com/dlqops/dlq/internal/store"
)

// MaxLimit bounds every listing's page size.
const MaxLimit = 500

const defaultLimit = 50

// query checks that r carries only the allowed query parameters, each at most once.
func query(r *http.Request, allowed ...string) (url.Values, error) {
	q := r.URL.Query()
	for name, vs := range q {
		if !slices.Contains(allowed, name) {
			return nil, badParam(name, "unknown parameter; allowed: %s", strings.Join(allowed, ", "))
		}
		if len(vs) > 1 {
			return nil, badParam(name, "given more than once")
		}
		if err := text(name, vs[0]); err != nil {
			return nil, err
		}
	}
	return q, nil
}

// text refuses what PostgreSQL cannot store in a text value (NUL, invalid UTF-8), as a
// 400 naming the parameter instead of a 500 from the database.
func text(name, v string) error {
	if !utf8.ValidString(v) || strings.ContainsRune(v, 0) {
		return badParam(name, "must be valid UTF-8 without NUL")
	}
	return nil
}

func limitParam(q url.Values) (int, error) {
	v := q.Get("limit")
	if v == "" {
		return defaultLimit, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > MaxLimit {
		return 0, badParam("limit", "must be an integer from 1 to %d", MaxLimit)
	}
	return n, nil
}

// positiveID parses an id in the path or the query; "" is 0 when optional.
func positiveID(name, v string, optional bool) (int64, error) {
	if v == "" && optional {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 1 {
		return 0, badParam(name, "must be a positive integer")
	}
	return n, nil
}

func pathID(c *call) (int64, error) { return positiveID("id", c.r.PathValue("id"), false) }

var knownStatuses = []store.Status{store.StatusScheduled, store.StatusRedriven, store.StatusParked,
	store.StatusReplaying, store.StatusReplayed, store.StatusDiscarded}

func parseStatuses(field string, vs []store.Status) error {
	return known(field, "status", vs, knownStatuses)
}

// parseReasons refuses a reason that does not exist: a typo (exhaust for exhausted) would
// otherwise select nothing and read as "no records".
func parseReasons(field string, vs []store.Reason) error {
	return known(field, "reason", vs, store.Reasons)
}

// known refuses a value of vs that is not one of allowed, naming the allowed values.
func known[T ~string](field, what string, vs, allowed []T) error {
	for _, v := range vs {
		if !slices.Contains(allowed, v) {
			names := make([]string, len(allowed))
			for i, a := range allowed {
				names[i] = string(a)
			}
			return badParam(field, "unknown %s %q; allowed: %s", what, v, strings.Join(names, ", "))
		}
	}
	return nil
}

func splitList[T ~string](v string) []T {
	if v == "" {
		return nil
	}
	parts := strings.Split(v, ",")
	out := make([]T, len(parts))
	for i, p := range parts {
		out[i] = T(strings.TrimSpace(p))
	}
	return out
}

// parseTime reads a time filter, absolute or relative to now (reltime).
func parseTime(field, v string, now time.Time) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	t, err := reltime.Parse(v, now)
	if err != nil {
		return time.Time{}, badParam(field, "%v", err)
	}
	return t, nil
}

// filterParams are the query parameters of a record filter, on the records and incidents
// listings and the export.
var filterParams = []string{"status", "reason", "dlq_topic", "original_topic", "error_class", "error_contains",
	"fingerprint", "route", "key", "key_b64", "stored_from", "stored_to",
	"value_contains", "value_contains_b64", "key_contains", "header", "header_value_contains"}

// listingQuery reads a record listing's query: its filter, cursor and page size.
func listingQuery(r *http.Request, now time.Time) (f store.Filter, cursor string, limit int, err error) {
	q, err := query(r, append(filterParams, "cursor", "limit", "masked_field", "masked_value", "masked_hash")...)
	if err != nil {
		return f, "", 0, err
	}
	if limit, err = limitParam(q); err != nil {
		return f, "", 0, err
	}
	f, err = filterFromQuery(q, now)
	return f, q.Get("cursor"), limit, err
}

// incidentsQuery reads an incident listing's query: the records' filters (statuses only
// those an incident counts) and how many incidents.
func incidentsQuery(r *http.Request, now time.Time) (f store.Filter, limit int, err error) {
	q, err := query(r, append(filterParams, "limit")...)
	if err != nil {
		return f, 0, err
	}
	if limit, err = limitParam(q); err != nil {
		return f, 0, err
	}
	if f, err = filterFromQuery(q, now); err != nil {
		return f, 0, err
	}
	for _, st := range f.Statuses {
		if !slices.Contains(store.IncidentStatuses, st) {
			return f, 0, badParam("status", "an incident counts parked and scheduled records, not %s", st)
		}
	}
	return f, limit, nil
}

// filterFromQuery reads the listing filters of the query.
func filterFromQuery(q url.Values, now time.Time) (store.Filter, error) {
	f := store.Filter{
		Statuses: splitList[store.Status](q.Get("status")), Reasons: splitList[store.Reason](q.Get("reason")),
		DLQTopic: q.Get("dlq_topic"), OriginalTopic: q.Get("original_topic"), ErrorClass: q.Get("error_class"),
		ErrorContains: q.Get("error_contains"), Fingerprint: q.Get("fingerprint"), Route: q.Get("route"),
	}
	if err := parseStatuses("status", f.Statuses); err != nil {
		return f, err
	}
	if err := parseReasons("reason", f.Reasons); err != nil {
		return f, err
	}
	var keyText, keyB64 *string
	if v, ok := q["key"]; ok {
		keyText = &v[0]
	}
	if v, ok := q["key_b64"]; ok {
		keyB64 = &v[0]
	}
	key, err := keyFilter("key", "key_b64", keyText, keyB64)
	if err != nil {
		return f, err
	}
	f.Key = key
	if err := contentFromQuery(q, &f); err != nil {
		return f, err
	}
	var err1, err2 error
	f.StoredFrom, err1 = parseTime("stored_from", q.Get("stored_from"), now)
	f.StoredTo, err2 = parseTime("stored_to", q.Get("stored_to"), now)
	return f, errors.Join(err1, err2)
}

// keyFilter reads the key filter: text is the key as UTF-8 text, b64 its bytes in standard
// base64 (for keys that are not text); at most one of them, and not empty (an empty key
// does not survive a job's stored filter). nil when neither is given.
func keyFilter(textName, b64Name string, asText, b64 *string) ([]byte, error) {
	switch {
	case asText != nil && b64 != nil:
		return nil, badParam(b64Name, "give %s (the key as text) or %s (its bytes in base64), not both", textName, b64Name)
	case asText != nil:
		if *asText == "" {
			return nil, badParam(textName, "must not be empty")
		}
		return []byte(*asText), nil
	case b64 != nil:
		key, err := base64.StdEncoding.DecodeString(*b64)
		if err != nil {
			return nil, badParam(b64Name, "must be standard base64 (for a key as text, use %s)", textName)
		}
		if len(key) == 0 {
			return nil, badParam(b64Name, "must not be empty")
		}
		return key, nil
	}
	return nil, nil
}

// filterFromBody converts a bulk request's filter.
func filterFromBody(in *Filter) (store.Filter, error) {
	f := store.Filter{Statuses: in.Statuses, Reasons: in.Reasons, DLQTopic: in.DLQTopic,
		OriginalTopic: in.OriginalTopic, ErrorClass: in.ErrorClass, ErrorContains: in.ErrorContains,
		Fingerprint: in.Fingerprint, Route: in.Route}
	if len(in.OriginalTopics) > 0 {
		return f, badParam("filter.original_topics", "is set from the token's topics, not by the caller")
	}
	fields := map[string]string{"filter.dlq_topic": f.DLQTopic, "filter.original_topic": f.OriginalTopic,
		"filter.error_class": f.ErrorClass, "filter.error_contains": f.ErrorContains, "filter.route": f.Route,
		"filter.fingerprint": f.Fingerprint}
	if in.Key != nil {
		fields["filter.key"] = *in.Key
	}
	for name, v := range fields {
		if err := text(name, v); err != nil {
			return f, err
		}
	}
	key, err := keyFilter("filter.key", "filter.key_b64", in.Key, in.KeyB64)
	if err != nil {
		return f, err
	}
	f.Key = key
	if err := contentFromBody(in, &f); err != nil {
		return f, err
	}
	if in.StoredFrom != nil {
		f.StoredFrom = *in.StoredFrom
	}
	if in.StoredTo != nil {
		f.StoredTo = *in.StoredTo
	}
	if err := parseReasons("filter.reasons", f.Reasons); err != nil {
		return f, err
	}
	return f, parseStatuses("filter.statuses", f.Statuses)
}

// decodeBody decodes a JSON body strictly: unknown fields, trailing data, text that is not
// UTF-8, keys given twice and keys in other letter case are errors.
// An empty body is allowed when optional.
func decodeBody(c *call, dst any, optional bool) error {
	raw, err := io.ReadAll(c.r.Body)
	if err != nil {
		return err // *http.MaxBytesError → 413, or the client went away
	}
	if len(bytes.TrimSpace(raw)) == 0 {
		if optional {
			return nil
		}
		return probInvalidBody.with("a JSON body is required")
	}
	if err := checkStrictJSON(raw, dst); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		p := probInvalidBody.with(fmt.Sprintf("not the expected JSON: %v", bodyError(err)))
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			p.Field = te.Field
		}
		return p
	}
	if dec.More() {
		return probInvalidBody.with("trailing data after the JSON value")
	}
	return nil
}

// bodyError keeps what a JSON error says about the body and nothing about our types.
func bodyError(err error) string {
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch {
	case errors.As(err, &te):
		return fmt.Sprintf("field %s must be %s", te.Field, te.Type.Kind())
	case errors.As(err, &se):
		return fmt.Sprintf("syntax error at byte %d", se.Offset)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return strings.TrimPrefix(err.Error(), "json: ")
	}
	return "malformed"
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v) // the client went away; nothing to do
}
