package console

import (
	"errors"
	"mime"
	"net/http"
)

// signInFormBytes bounds a form sent without a session (the sign-in form): a CSRF token
// and a bearer token fit many times over, and a caller nobody knows yet gets no more.
const signInFormBytes = 4 << 10

// readForm bounds and parses the form of a state change before anything else reads it,
// so that neither the CSRF check nor a handler makes Go buffer a large body: a session's
// form may carry an edited record (maxFormBytes), a request without one only a sign-in.
// The console's forms are URL-encoded; multipart bodies are refused unread. It reports
// whether the request may go on, having answered it otherwise.
func (s *Server) readForm(w http.ResponseWriter, r *http.Request) bool {
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		return true
	}
	limit := int64(signInFormBytes)
	sess := s.sessions.fromRequest(r)
	if sess != nil {
		limit = s.cfg.MaxFormBytes
	}
	if r.ContentLength != 0 {
		if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/x-www-form-urlencoded" {
			s.fail(w, r, sess, http.StatusUnsupportedMediaType, "The console takes URL-encoded forms only.")
			return false
		}
	}
	if r.ContentLength > limit {
		s.tooLarge(w, r, sess)
		return false
	}
	r.Body = http.MaxBytesReader(w, r.Body, limit)
	if err := r.ParseForm(); err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			s.tooLarge(w, r, sess)
			return false
		}
		s.fail(w, r, sess, http.StatusBadRequest, "The form could not be read.")
		return false
	}
	return true
}

func (s *Server) tooLarge(w http.ResponseWriter, r *http.Request, sess *session) {
	w.Header().Set("Connection", "close") // the rest of the body is not read
	s.fail(w, r, sess, http.StatusRequestEntityTooLarge, "The form is too large.")
}
