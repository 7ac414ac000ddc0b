package console

import (
	"encoding/base64"
	"net/http"
	"net/url"
	"strconv"

	"github.com/dlqops/dlq/internal/api"
	"github.com/dlqops/dlq/internal/store"
)

// filterParams are the record filters of the API; the console's URLs use the same names,
// so a console view and an API query share their filters.
var filterParams = []string{"status", "reason", "dlq_topic", "original_topic", "route", "error_class",
	"error_contains", "key", "stored_from", "stored_to"}

// filterQuery keeps the non-empty record filters of q. A key given as text (key_text)
// becomes the API's base64 key.
func filterQuery(q url.Values) url.Values {
	out := url.Values{}
	for _, name := range filterParams {
		if v := q.Get(name); v != "" {
			out.Set(name, v)
		}
	}
	if kt := q.Get("key_text"); kt != "" && out.Get("key") == "" {
		out.Set("key", base64.StdEncoding.EncodeToString([]byte(kt)))
	}
	return out
}

type recordsPage struct {
	Records []api.Record
	// Filter is the view's filter, for the form and the bulk form; Query adds the page
	// size, for the paging links.
	Filter   url.Values
	Query    url.Values
	KeyText  string
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
	view := recordsPage{Records: page.Records, Filter: f, Query: f, KeyText: q.Get("key_text"), Limit: q.Get("limit"),
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
}

func (s *Server) record(w http.ResponseWriter, r *http.Request, sess *session) {
	var d api.RecordDetail
	if _, err := s.call(r, sess, http.MethodGet, "/v1/records/"+url.PathEscape(r.PathValue("id")), nil, nil, &d); err != nil {
		s.failAPI(w, r, sess, err)
		return
	}
	page := recordPage{RecordDetail: d, Key: viewPayload(d.Key), Value: viewPayload(d.Value),
		Headers: viewHeaders(d.Headers), ReplayTopics: s.cfg.ReplayTopics, IdempotencyKey: randomToken()}
	s.render(w, sess, http.StatusOK, "record", "Record "+strconv.FormatInt(d.Record.ID, 10), "records", page)
}

func recordPath(r *http.Request) string { return "/ui/records/" + url.PathEscape(r.PathValue("id")) }

func (s *Server) replay(w http.ResponseWriter, r *http.Request, sess *session) {
	req := api.ReplayRequest{TargetTopic: r.PostFormValue("target_topic"), ResetRetry: r.PostFormValue("reset_retry") == "on"}
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
