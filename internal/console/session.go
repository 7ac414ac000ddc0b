package console

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"net/http"
	"sync"
	"time"

	"github.com/dlqops/dlq/internal/auth"
)

// Cookie names. The session cookie names a session held in this process's memory; the
// sign-in cookie is the double-submit CSRF token of the sign-in form.
const (
	sessionCookie = "dlq_console"
	loginCookie   = "dlq_console_login"
)

// session is one sign-in. token is the bearer token the console sends to the API on the
// operator's behalf; it never leaves the process.
type session struct {
	id, csrf, token string
	principal       auth.Principal
	expires         time.Time

	mu    sync.Mutex
	flash string // a one-shot message for the next page
}

// sessions holds the sign-ins of this process. Expired ones are dropped when met and at
// each sign-in, so the map needs no goroutine of its own.
type sessions struct {
	ttl   time.Duration
	clock func() time.Time

	mu sync.Mutex
	m  map[string]*session
}

func newSessions(ttl time.Duration, clock func() time.Time) *sessions {
	return &sessions{ttl: ttl, clock: clock, m: map[string]*session{}}
}

func randomToken() string {
	var b [32]byte
	_, _ = rand.Read(b[:]) // crypto/rand never fails on supported platforms
	return base64.RawURLEncoding.EncodeToString(b[:])
}

func (ss *sessions) create(token string, p auth.Principal) *session {
	now := ss.clock()
	s := &session{id: randomToken(), csrf: randomToken(), token: token, principal: p, expires: now.Add(ss.ttl)}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	for id, old := range ss.m {
		if !now.Before(old.expires) {
			delete(ss.m, id)
		}
	}
	ss.m[s.id] = s
	return s
}

func (ss *sessions) fromRequest(r *http.Request) *session {
	c, err := r.Cookie(sessionCookie)
	if err != nil {
		return nil
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	s := ss.m[c.Value]
	if s == nil {
		return nil
	}
	if !ss.clock().Before(s.expires) {
		delete(ss.m, s.id)
		return nil
	}
	return s
}

func (ss *sessions) remove(s *session) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	delete(ss.m, s.id)
}

// checkCSRF reports whether the form's csrf field is the session's token.
func (s *session) checkCSRF(r *http.Request) bool {
	got := r.PostFormValue("csrf")
	return got != "" && subtle.ConstantTimeCompare([]byte(got), []byte(s.csrf)) == 1
}

func (s *session) setFlash(msg string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.flash = msg
}

func (s *session) takeFlash() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	msg := s.flash
	s.flash = ""
	return msg
}

// cookie builds one of the console's cookies: HttpOnly, SameSite=Strict, Secure when the
// request came over TLS. maxAge < 0 deletes it.
func cookie(r *http.Request, name, value string, maxAge int) *http.Cookie {
	return &http.Cookie{Name: name, Value: value, Path: "/ui/", MaxAge: maxAge, HttpOnly: true,
		Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode}
}
