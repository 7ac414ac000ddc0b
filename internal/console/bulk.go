package console

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/dlqops/dlq/internal/api"
	"github.com/dlqops/dlq/internal/store"
)

// bulkForm is a bulk replay or discard of a records view's filter, from its first form
// through the dry run's count to the typed confirmation.
type bulkForm struct {
	Filter url.Values
	// IDs are the records ticked on the records page; when there are any, the job takes
	// them instead of Filter.
	IDs            []int64
	Action         string // "replay" or "discard"
	TargetTopic    string
	RedriveTo      string
	ResetRetry     bool
	Rate           string
	Reason         string
	ReplayTopics   []string
	Count          int64
	NoPayload      int64 // of Count, records a replay refuses for having no payload
	Error          string
	IdempotencyKey string
}

// filterBody is the API filter of a records view's filter parameters.
func filterBody(f url.Values) (*api.Filter, error) {
	out := &api.Filter{DLQTopic: f.Get("dlq_topic"), OriginalTopic: f.Get("original_topic"), Route: f.Get("route"),
		ErrorClass: f.Get("error_class"), ErrorContains: f.Get("error_contains"), Fingerprint: f.Get("fingerprint")}
	for _, v := range splitComma(f.Get("status")) {
		out.Statuses = append(out.Statuses, store.Status(v))
	}
	for _, v := range splitComma(f.Get("reason")) {
		out.Reasons = append(out.Reasons, store.Reason(v))
	}
	// The key goes to the API as given (text or base64): the API checks it.
	for _, k := range []struct {
		name string
		dst  **string
	}{{"key", &out.Key}, {"key_b64", &out.KeyB64}} {
		if v := f.Get(k.name); v != "" {
			*k.dst = &v
		}
	}
	for _, t := range []struct {
		name string
		dst  **time.Time
	}{{"stored_from", &out.StoredFrom}, {"stored_to", &out.StoredTo}} {
		if v := f.Get(t.name); v != "" {
			ts, err := time.Parse(time.RFC3339Nano, v)
			if err != nil {
				return nil, fmt.Errorf("%s: must be an RFC 3339 time", t.name)
			}
			*t.dst = &ts
		}
	}
	return out, nil
}

func splitComma(v string) []string {
	var out []string
	for p := range strings.SplitSeq(v, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// bulk runs the two steps of a bulk job: without confirm_count it asks the API for the
// dry-run count and shows it; with the count typed back it submits the job and shows its
// progress. A selection that changed meanwhile shows the new count to confirm.
func (s *Server) bulk(w http.ResponseWriter, r *http.Request, sess *session) {
	form := bulkForm{
		Filter: filterQuery(r.PostForm), Action: r.PostFormValue("action"), TargetTopic: r.PostFormValue("target_topic"),
		RedriveTo: r.PostFormValue("redrive_to"), ResetRetry: r.PostFormValue("reset_retry") == "on", Rate: strings.TrimSpace(r.PostFormValue("rate_per_second")),
		Reason: r.PostFormValue("discard_reason"), ReplayTopics: s.cfg.ReplayTopics,
		IdempotencyKey: r.PostFormValue("idempotency_key"),
	}
	if form.Action != "replay" && form.Action != "discard" {
		s.fail(w, r, sess, http.StatusBadRequest, "Choose replay or discard.")
		return
	}
	ids, ok := selectedIDs(r.PostForm)
	if !ok {
		s.fail(w, r, sess, http.StatusBadRequest, "A selected record is not a record id.")
		return
	}
	var req api.BulkRequest
	if len(ids) > 0 {
		form.IDs, form.Filter, req.IDs = ids, nil, ids
	} else {
		f, err := filterBody(form.Filter)
		if err != nil {
			s.fail(w, r, sess, http.StatusBadRequest, err.Error())
			return
		}
		req.Filter = f
	}
	var err error
	if form.Action == "replay" {
		req.TargetTopic, req.RedriveTo, req.ResetRetry = form.TargetTopic, api.ReplayRedriveTo(form.RedriveTo), form.ResetRetry
		if form.Rate != "" {
			if req.RatePerSecond, err = strconv.Atoi(form.Rate); err != nil {
				s.fail(w, r, sess, http.StatusBadRequest, "The rate is a whole number of records per second (0: no limit).")
				return
			}
		}
	} else {
		req.Reason = form.Reason
	}
	path := "/v1/bulk/" + form.Action
	typed := strings.TrimSpace(r.PostFormValue("confirm_count"))
	if r.PostFormValue("step") != "confirm" {
		req.DryRun = true
		var dry api.DryRun
		if _, err := s.call(r, sess, http.MethodPost, path, nil, req, &dry); err != nil {
			s.failAPI(w, r, sess, err)
			return
		}
		form.Count, form.NoPayload, form.IdempotencyKey = dry.Count, dry.NoPayload, randomToken()
		s.render(w, sess, http.StatusOK, "bulk", "Confirm bulk "+form.Action, "records", form)
		return
	}
	form.Count, _ = strconv.ParseInt(r.PostFormValue("count"), 10, 64)
	n, err := strconv.ParseInt(typed, 10, 64)
	if err != nil || n != form.Count {
		form.Error = "Type the count shown to confirm."
		s.render(w, sess, http.StatusBadRequest, "bulk", "Confirm bulk "+form.Action, "records", form)
		return
	}
	req.ConfirmCount = &n
	var job api.Job
	_, err = s.call(r, sess, http.MethodPost, path, nil, req, &job)
	var ae *apiError
	switch {
	case err == nil:
		sess.setFlash(fmt.Sprintf("Bulk %s job %d submitted for %d records.", form.Action, job.ID, n))
		http.Redirect(w, r, "/ui/jobs/"+strconv.FormatInt(job.ID, 10), http.StatusSeeOther)
	case errors.As(err, &ae) && ae.problem.Count != nil:
		form.Count, form.IdempotencyKey = *ae.problem.Count, randomToken()
		form.Error = "The selection changed since the dry run; confirm the new count."
		s.render(w, sess, http.StatusConflict, "bulk", "Confirm bulk "+form.Action, "records", form)
	default:
		s.failAPI(w, r, sess, err)
	}
}
