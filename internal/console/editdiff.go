package console

import (
	"net/http"
	"net/url"
	"strconv"

	"github.com/dlqops/dlq/internal/api"
	"github.com/dlqops/dlq/internal/editdiff"
)

// editDiff is what a replay's edit changes, as the confirmation and the record's history
// show it: the record and the edit as the signed-in token sees them (masked fields as
// their placeholders).
type editDiff struct {
	Value   []editdiff.Line
	Headers []editdiff.HeaderChange
	// ValueSent, HeadersSent: the edit replaces the value, the headers.
	ValueSent, HeadersSent bool
}

// Empty reports an edit that sends the record as stored.
func (d editDiff) Empty() bool { return len(d.Value) == 0 && len(d.Headers) == 0 }

func newEditDiff(rec *api.RecordDetail, value *api.Bytes, headers *[]api.Header) editDiff {
	var d editDiff
	if value != nil {
		d.ValueSent = true
		d.Value = editdiff.Value(decodeBytes(rec.Value), decodeBytes(*value))
	}
	if headers != nil {
		d.HeadersSent = true
		d.Headers = editdiff.Headers(diffHeaders(rec.Headers), diffHeaders(*headers))
	}
	return d
}

func diffHeaders(hs []api.Header) []editdiff.Header {
	out := make([]editdiff.Header, len(hs))
	for i, h := range hs {
		out[i] = editdiff.Header{Key: h.Key, Value: decodeBytes(h.Value)}
	}
	return out
}

// historyEdit is one replay with edits of the record's history, with its diff.
type historyEdit struct {
	Entry api.AuditEntry
	Diff  editDiff
}

func historyEdits(rec *api.RecordDetail, entries []api.AuditEntry) []historyEdit {
	var out []historyEdit
	for _, e := range entries {
		if e.Edit != nil {
			out = append(out, historyEdit{Entry: e, Diff: newEditDiff(rec, e.Edit.Value, e.Edit.Headers)})
		}
	}
	return out
}

// confirmPage is the data of replayconfirm.html: the edit form's fields, carried on to
// the confirming request unchanged, and the diff they make.
type confirmPage struct {
	ID   int64
	Form url.Values
	Diff editDiff
}

// confirmEdit shows what an edit changes before it is sent: the edit form posts here
// first, and only the confirmation's own post (confirm=on) replays.
func (s *Server) confirmEdit(w http.ResponseWriter, r *http.Request, sess *session, req *api.ReplayRequest) {
	var d api.RecordDetail
	if _, err := s.call(r, sess, http.MethodGet, "/v1/records/"+url.PathEscape(r.PathValue("id")), nil, nil, &d); err != nil {
		s.failAPI(w, r, sess, err)
		return
	}
	form := url.Values{}
	for _, k := range []string{"value", "value_encoding", "headers", "headers_encoding", "target_topic", "redrive_to", "reset_retry"} {
		if v, ok := r.PostForm[k]; ok {
			form[k] = v
		}
	}
	s.render(w, sess, http.StatusOK, "replayconfirm", "Confirm the edit of record "+strconv.FormatInt(d.Record.ID, 10), "records",
		confirmPage{ID: d.Record.ID, Form: form, Diff: newEditDiff(&d, req.Value, req.Headers)})
}
