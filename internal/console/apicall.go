package console

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"

	"github.com/dlqops/dlq/internal/api"
)

// apiError is an answer of the API other than a success: its problem, shown to the
// operator as the API worded it.
type apiError struct{ problem api.Problem }

func (e *apiError) Error() string { return e.problem.Error() }

// recorder is the in-process ResponseWriter of an API call.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (rec *recorder) Header() http.Header { return rec.header }
func (rec *recorder) Write(b []byte) (int, error) {
	if rec.status == 0 {
		rec.status = http.StatusOK
	}
	return rec.body.Write(b)
}
func (rec *recorder) WriteHeader(status int) {
	if rec.status == 0 {
		rec.status = status
	}
}

// call sends one request to the API handler as the session's principal and decodes a
// success into out (when not nil). The request keeps the console request's context,
// client address and TLS state, so the API sees it as it would see the operator.
func (s *Server) call(r *http.Request, sess *session, method, path string, q url.Values, body, out any) (int, error) {
	target := path
	if len(q) > 0 {
		target += "?" + q.Encode()
	}
	var rd io.Reader = http.NoBody
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			return 0, err
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(api.ForConsole(r.Context()), method, target, rd)
	if err != nil {
		return 0, err
	}
	req.RemoteAddr, req.TLS, req.Host = r.RemoteAddr, r.TLS, r.Host
	req.Header.Set("Authorization", "Bearer "+sess.token)
	req.Header.Set("User-Agent", "dlq-console")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	// A page's reads may run at once (the overview's); only a state change reads its form.
	if method != http.MethodGet {
		if k := r.PostFormValue("idempotency_key"); k != "" {
			req.Header.Set("Idempotency-Key", k)
		}
	}
	rec := &recorder{header: http.Header{}}
	s.cfg.API.ServeHTTP(rec, req)
	if rec.status == 0 {
		rec.status = http.StatusOK
	}
	if rec.status >= 300 {
		var p api.Problem
		if err := json.Unmarshal(rec.body.Bytes(), &p); err != nil || p.Status == 0 {
			p = api.Problem{Status: rec.status, Title: http.StatusText(rec.status)}
		}
		return rec.status, &apiError{problem: p}
	}
	if out != nil {
		if err := json.Unmarshal(rec.body.Bytes(), out); err != nil {
			return rec.status, fmt.Errorf("console: decode %s %s: %w", method, path, err)
		}
	}
	return rec.status, nil
}
