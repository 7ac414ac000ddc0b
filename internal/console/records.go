package console

import (
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/dlqops/dlq/internal/api"
	"github.com/dlqops/dlq/internal/store"
)

// filterParams are the record filters of the API; the console's URLs use the same names,
// so a console view and an API query share their filters.
var filterParams = []string{"status", "reason", "dlq_topic", "original_topic", "route", "error_class",
	"error_contains", "fingerprint", "key", "key_b64", "stored_from", "stored_to",
	"value_contains", "key_contains", "header", "header_value_contains"}

// filterQuery keeps the non-empty record filters of q.
func filterQuery(q url.Values) url.Values {
	out := url.Values{}
	for _, name := range filterParams {
		if v := q.Get(name); v != "" {
			out.Set(name, v)
		}
	}
	return out
}

type recordsPage struct {
	Records []api.Record
	// Filter is the view's filter, for the form and the bulk form; Query adds the page
	// size, for the paging links.
	Filter   url.Values
	Query    url.Values
	Limit    string
	Cursor   string
	Next     string
	Statuses []store.Status
	Reasons  []store.Reason
	Bulk     bulkForm
	// Total is how many records the filter selects; Errors the API's refusal of a filter
	// field, shown beside it, by field.
	Total           int64
	TotalIsEstimate bool
	Errors          map[string]string
}

var (
	statusNames = []store.Status{store.StatusParked, store.StatusScheduled, store.StatusReplaying,
		store.StatusReplayed, store.StatusRedriven, store.StatusDiscarded}
	reasonNames = []store.Reason{store.ReasonExhausted, store.ReasonUnroutable, store.ReasonInvalidRetryCount,
		store.ReasonNotRetryable, store.ReasonTooLarge, store.ReasonUnknownTopic, store.ReasonUnauthorized, store.ReasonSourceUnavailable,
		store.ReasonTargetNotAllowed, store.ReasonUnknownGroup, store.ReasonManual, store.ReasonBackoff}
)

func (s *Server) records(w http.ResponseWriter, r *http.Request, sess *session) {
	q := r.URL.Query()
	f := filterQuery(q)
	apiQ := url.Values{}
	for k, v := range f {
		apiQ[k] = v
	}
	for _, name := range []string{"cursor", "limit"} {
		if v := q.Get(name); v != "" {
			apiQ.Set(name, v)
		}
	}
	var page api.RecordPage
	status := http.StatusOK
	view := recordsPage{Filter: f, Query: f, Limit: q.Get("limit"), Cursor: q.Get("cursor"),
		Statuses: statusNames, Reasons: reasonNames, Bulk: bulkForm{Filter: f, ReplayTopics: s.cfg.ReplayTopics}}
	if _, err := s.call(r, sess, http.MethodGet, "/v1/records", apiQ, nil, &page); err != nil {
		field, detail, ok := filterRefusal(err)
		if !ok {
			s.failAPI(w, r, sess, err)
			return
		}
		// The form stays as typed, with the API's refusal beside the field it names.
		status, view.Errors = http.StatusBadRequest, map[string]string{field: detail}
	}
	view.Records, view.Next, view.Total, view.TotalIsEstimate = page.Records, page.NextCursor, page.Total, page.TotalIsEstimate
	if view.Limit != "" {
		view.Query = cloneWith(f, "limit", view.Limit)
	}
	s.render(w, sess, status, "records", "Records", "records", view)
}

// filterRefusal is the field and detail of the API's 400 about a filter field of the form.
func filterRefusal(err error) (field, detail string, ok bool) {
	var ae *apiError
	if !errors.As(err, &ae) || ae.problem.Status != http.StatusBadRequest {
		return "", "", false
	}
	field = ae.problem.Field
	if !slices.Contains(filterParams, field) && field != "limit" && field != "cursor" {
		return "", "", false
	}
	return field, ae.problem.Detail, true
}

func cloneWith(q url.Values, name, value string) url.Values {
	out := url.Values{}
	for k, v := range q {
		out[k] = v
	}
	out.Set(name, value)
	return out
}

type recordPage struct {
	api.RecordDetail
	Key, Value     payload
	Headers        []headerRow
	ReplayTopics   []string
	IdempotencyKey string
	// Edit is the edit-and-replay form's starting point.
	Edit editForm
	// Kcat is the command line that produces the record with kcat (kcat.go); KcatWhy
	// says why there is none.
	Kcat, KcatWhy string
	// History is the record's newest audit entries; MoreHistory says there are older ones.
	// Edits are those of them that replayed an edit, with what each changed.
	History     []api.AuditEntry
	Edits       []historyEdit
	MoreHistory bool
	// NoPayload: a replay is refused unless it gives a value (store.Record.NoPayload).
	NoPayload bool
}

// historyLimit is how many audit entries the record page shows.
const historyLimit = 20

// editForm offers a record's value and headers to correct before a replay, each as text
// when it is text and as base64 otherwise, so that the console edits any record the API
// can (a value may also be sent as null).
type editForm struct {
	Value, Headers string
	// ValueEncoding is "text", "base64" or "null"; HeadersEncoding "text" or "base64".
	ValueEncoding, HeadersEncoding string
}

func newEditForm(d *api.RecordDetail) editForm {
	f := editForm{ValueEncoding: "text", HeadersEncoding: "text"}
	switch v := decodeBytes(d.Value); {
	case d.Value.Null:
		f.ValueEncoding = "null"
	case printable(v):
		f.Value = string(v)
	default:
		f.ValueEncoding, f.Value = "base64", d.Value.Base64
	}
	var text, b64 []string
	for _, h := range d.Headers {
		v := decodeBytes(h.Value)
		if h.Value.Null || !printable([]byte(h.Key)) || !printable(v) || strings.ContainsAny(h.Key+string(v), "\r\n") ||
			strings.Contains(h.Key, ": ") {
			f.HeadersEncoding = "base64"
		}
		text = append(text, h.Key+": "+string(v))
		value := h.Value.Base64
		if h.Value.Null {
			value = nullHeader
		}
		b64 = append(b64, base64.StdEncoding.EncodeToString([]byte(h.Key))+" "+value)
	}
	f.Headers = strings.Join(text, "\n")
	if f.HeadersEncoding == "base64" {
		f.Headers = strings.Join(b64, "\n")
	}
	return f
}

// nullHeader is a null header value in the base64 form of the headers ("-" is not base64).
const nullHeader = "-"

func (s *Server) record(w http.ResponseWriter, r *http.Request, sess *session) {
	var d api.RecordDetail
	var unmask url.Values // the masked fields in clear: the API checks the permission and audits
	if r.URL.Query().Get("unmask") == "true" {
		unmask = url.Values{"unmask": {"true"}}
	}
	if _, err := s.call(r, sess, http.MethodGet, "/v1/records/"+url.PathEscape(r.PathValue("id")), unmask, nil, &d); err != nil {
		s.failAPI(w, r, sess, err)
		return
	}
	var history api.AuditList
	q := url.Values{"record_id": {strconv.FormatInt(d.Record.ID, 10)}, "limit": {strconv.Itoa(historyLimit)}}
	if _, err := s.call(r, sess, http.MethodGet, "/v1/audit", q, nil, &history); err != nil {
		s.failAPI(w, r, sess, err)
		return
	}
	page := recordPage{RecordDetail: d, Key: viewPayload(d.Key, d.KeyDecoded), Value: viewPayload(d.Value, d.ValueDecoded),
		Headers: viewHeaders(d.Headers), ReplayTopics: s.cfg.ReplayTopics, IdempotencyKey: randomToken(),
		Edit: newEditForm(&d), History: history.Entries, Edits: historyEdits(&d, history.Entries), MoreHistory: history.NextBefore != 0,
		NoPayload: d.Record.Reason == store.ReasonSourceUnavailable && d.Key.Null && d.Value.Null}
	if d.Record.Original.Topic == "" {
		page.KcatWhy = "The original topic is unknown: there is no topic to produce to."
	} else if cmd, ok, why := kcatCommand(d.Record.Original.Topic, &d); ok {
		page.Kcat = cmd
	} else {
		page.KcatWhy = "kcat cannot produce this record exactly: " + why + "."
	}
	s.render(w, sess, http.StatusOK, "record", "Record "+strconv.FormatInt(d.Record.ID, 10), "records", page)
}

func recordPath(r *http.Request) string { return "/ui/records/" + url.PathEscape(r.PathValue("id")) }

func (s *Server) replay(w http.ResponseWriter, r *http.Request, sess *session) {
	req := api.ReplayRequest{TargetTopic: r.PostFormValue("target_topic"), RedriveTo: api.ReplayRedriveTo(r.PostFormValue("redrive_to")),
		ResetRetry: r.PostFormValue("reset_retry") == "on"}
	if r.PostFormValue("edit") == "on" {
		if err := editRequest(r, &req); err != nil {
			s.actionDone(w, r, sess, recordPath(r), &apiError{problem: api.Problem{Status: http.StatusBadRequest,
				Title: "Invalid edit", Detail: err.Error()}}, "")
			return
		}
		if r.PostFormValue("confirm") != "on" {
			s.confirmEdit(w, r, sess, &req)
			return
		}
	}
	var job api.Job
	_, err := s.call(r, sess, http.MethodPost, "/v1/records/"+url.PathEscape(r.PathValue("id"))+"/replay", nil, req, &job)
	to := recordPath(r)
	if err == nil {
		to = "/ui/jobs/" + strconv.FormatInt(job.ID, 10)
	}
	s.actionDone(w, r, sess, to, err, "Replay job "+strconv.FormatInt(job.ID, 10)+" submitted.")
}

func (s *Server) discard(w http.ResponseWriter, r *http.Request, sess *session) {
	req := api.DiscardRequest{Reason: r.PostFormValue("reason")}
	_, err := s.call(r, sess, http.MethodPost, "/v1/records/"+url.PathEscape(r.PathValue("id"))+"/discard", nil, req, nil)
	s.actionDone(w, r, sess, recordPath(r), err, "Record discarded.")
}

func (s *Server) retryNow(w http.ResponseWriter, r *http.Request, sess *session) {
	_, err := s.call(r, sess, http.MethodPost, "/v1/records/"+url.PathEscape(r.PathValue("id"))+"/retry-now", nil, nil, nil)
	s.actionDone(w, r, sess, recordPath(r), err, "Record due now: the next run redrives it.")
}

// editRequest adds the edit form's value and headers to a replay. Browsers send a
// textarea's line breaks as CRLF; they are turned back into LF in text, and base64 may be
// wrapped over lines.
func editRequest(r *http.Request, req *api.ReplayRequest) error {
	unCRLF := func(v string) string { return strings.ReplaceAll(v, "\r\n", "\n") }
	if _, ok := r.PostForm["value"]; ok {
		v := r.PostFormValue("value")
		switch r.PostFormValue("value_encoding") {
		case "null":
			req.Value = &api.Bytes{Null: true}
		case "base64":
			raw, err := base64.StdEncoding.DecodeString(strings.Join(strings.Fields(v), ""))
			if err != nil {
				return errors.New("value: not standard base64")
			}
			req.Value = &api.Bytes{Base64: base64.StdEncoding.EncodeToString(raw)}
		default:
			req.Value = &api.Bytes{Base64: base64.StdEncoding.EncodeToString([]byte(unCRLF(v)))}
		}
	}
	if _, ok := r.PostForm["headers"]; ok {
		parse := textHeader
		if r.PostFormValue("headers_encoding") == "base64" {
			parse = base64Header
		}
		hs := []api.Header{}
		for n, line := range strings.Split(unCRLF(r.PostFormValue("headers")), "\n") {
			if strings.TrimSpace(line) == "" {
				continue
			}
			h, err := parse(line)
			if err != nil {
				return fmt.Errorf("header line %d: %w", n+1, err)
			}
			hs = append(hs, h)
		}
		req.Headers = &hs
	}
	return nil
}

// textHeader reads "name: value".
func textHeader(line string) (api.Header, error) {
	k, v, ok := strings.Cut(line, ": ")
	if !ok {
		return api.Header{}, errors.New("write it as name: value")
	}
	return api.Header{Key: k, Value: api.Bytes{Base64: base64.StdEncoding.EncodeToString([]byte(v))}}, nil
}

// base64Header reads "name value", each in base64; no value is an empty one, "-" a null one.
func base64Header(line string) (api.Header, error) {
	fields := strings.Fields(line)
	if len(fields) > 2 {
		return api.Header{}, errors.New("write it as the name and the value in base64, separated by a space")
	}
	name, err := base64.StdEncoding.DecodeString(fields[0])
	if err != nil {
		return api.Header{}, errors.New("the name is not standard base64")
	}
	if !utf8.Valid(name) {
		return api.Header{}, errors.New("the name must be UTF-8 text: the API carries header names as JSON strings")
	}
	h := api.Header{Key: string(name)}
	switch {
	case len(fields) == 1:
	case fields[1] == nullHeader:
		h.Value.Null = true
	default:
		v, err := base64.StdEncoding.DecodeString(fields[1])
		if err != nil {
			return api.Header{}, errors.New("the value is not standard base64")
		}
		h.Value.Base64 = base64.StdEncoding.EncodeToString(v)
	}
	return h, nil
}
