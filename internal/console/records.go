package console

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/dlqops/dlq/internal/api"
	"github.com/dlqops/dlq/internal/store"
)

// filterParams are the record filters of the API; the console's URLs use the same names,
// so a console view and an API query share their filters.
var filterParams = []string{"status", "reason", "dlq_topic", "original_topic", "route", "error_class",
	"error_contains", "key", "key_b64", "stored_from", "stored_to"}

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
}

var (
	statusNames = []store.Status{store.StatusParked, store.StatusScheduled, store.StatusReplaying,
		store.StatusReplayed, store.StatusRedriven, store.StatusDiscarded}
	reasonNames = []store.Reason{store.ReasonExhausted, store.ReasonUnroutable, store.ReasonInvalidRetryCount,
		store.ReasonTooLarge, store.ReasonUnknownTopic, store.ReasonUnauthorized, store.ReasonManual, store.ReasonBackoff}
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
	if _, err := s.call(r, sess, http.MethodGet, "/v1/records", apiQ, nil, &page); err != nil {
		s.failAPI(w, r, sess, err)
		return
	}
	view := recordsPage{Records: page.Records, Filter: f, Query: f, Limit: q.Get("limit"),
		Cursor: q.Get("cursor"), Next: page.NextCursor, Statuses: statusNames, Reasons: reasonNames,
		Bulk: bulkForm{Filter: f, ReplayTopics: s.cfg.ReplayTopics}}
	if view.Limit != "" {
		view.Query = cloneWith(f, "limit", view.Limit)
	}
	s.render(w, sess, http.StatusOK, "records", "Records", "records", view)
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
}

// editForm offers a record's value and headers as text to correct before a replay. A
// value that is not text cannot be edited here (the API takes base64); headers only when
// every one of them is text.
type editForm struct {
	ValueEditable, HeadersEditable bool
	Value, Headers                 string
}

func newEditForm(d *api.RecordDetail) editForm {
	var f editForm
	if v := decodeBytes(d.Value); printable(v) {
		f.ValueEditable, f.Value = true, string(v)
	}
	f.HeadersEditable = true
	var lines []string
	for _, h := range d.Headers {
		v := decodeBytes(h.Value)
		if h.Value.Null || !printable([]byte(h.Key)) || !printable(v) || strings.ContainsAny(h.Key+string(v), "\r\n") ||
			strings.Contains(h.Key, ": ") {
			f.HeadersEditable = false
			break
		}
		lines = append(lines, h.Key+": "+string(v))
	}
	if f.HeadersEditable {
		f.Headers = strings.Join(lines, "\n")
	}
	return f
}

func (s *Server) record(w http.ResponseWriter, r *http.Request, sess *session) {
	var d api.RecordDetail
	if _, err := s.call(r, sess, http.MethodGet, "/v1/records/"+url.PathEscape(r.PathValue("id")), nil, nil, &d); err != nil {
		s.failAPI(w, r, sess, err)
		return
	}
	page := recordPage{RecordDetail: d, Key: viewPayload(d.Key), Value: viewPayload(d.Value),
		Headers: viewHeaders(d.Headers), ReplayTopics: s.cfg.ReplayTopics, IdempotencyKey: randomToken(),
		Edit: newEditForm(&d)}
	s.render(w, sess, http.StatusOK, "record", "Record "+strconv.FormatInt(d.Record.ID, 10), "records", page)
}

func recordPath(r *http.Request) string { return "/ui/records/" + url.PathEscape(r.PathValue("id")) }

func (s *Server) replay(w http.ResponseWriter, r *http.Request, sess *session) {
	req := api.ReplayRequest{TargetTopic: r.PostFormValue("target_topic"), ResetRetry: r.PostFormValue("reset_retry") == "on"}
	if r.PostFormValue("edit") == "on" {
		if err := editRequest(r, &req); err != nil {
			s.actionDone(w, r, sess, recordPath(r), &apiError{problem: api.Problem{Status: http.StatusBadRequest,
				Title: "Invalid edit", Detail: err.Error()}}, "")
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
// textarea's line breaks as CRLF; they are turned back into LF.
func editRequest(r *http.Request, req *api.ReplayRequest) error {
	unCRLF := func(v string) string { return strings.ReplaceAll(v, "\r\n", "\n") }
	if _, ok := r.PostForm["value"]; ok {
		req.Value = &api.Bytes{Base64: base64.StdEncoding.EncodeToString([]byte(unCRLF(r.PostFormValue("value"))))}
	}
	if _, ok := r.PostForm["headers"]; ok {
		hs := []api.Header{}
		for n, line := range strings.Split(unCRLF(r.PostFormValue("headers")), "\n") {
			if strings.TrimSpace(line) == "" {
				continue
			}
			k, v, ok := strings.Cut(line, ": ")
			if !ok {
				return fmt.Errorf("header line %d: write it as name: value", n+1)
			}
			hs = append(hs, api.Header{Key: k, Value: api.Bytes{Base64: base64.StdEncoding.EncodeToString([]byte(v))}})
		}
		req.Headers = &hs
	}
	return nil
}
