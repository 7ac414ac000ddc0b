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
// sign-in cookie is the double-submit CSRF token of the sign-in form. Over https they carry
// the __Host- prefix, which browsers accept only from a secure origin, on path /, with no
// domain: a sibling subdomain or a plain-HTTP page cannot set or shadow them.
const (
	sessionCookie = "dlq_console"
	loginCookie   = "dlq_console_login"
	hostPrefix    = "__Host-"
)

// cookieJar makes and reads the console's cookies.
type cookieJar struct {
	// httpsURL: the console is reached over https (public_url), even if this process
	// serves plain HTTP behind a TLS-terminating proxy.
	httpsURL bool
}

// secure reports whether r reached the console over https.
func (j cookieJar) secure(r *http.Request) bool { return r.TLS != nil || j.httpsURL }

// name is the cookie's name for r.
func (j cookieJar) name(r *http.Request, base string) string {
	if j.secure(r) {
		return hostPrefix + base
	}
	return base
}

// get returns the value of the cookie named base, or "".
func (j cookieJar) get(r *http.Request, base string) string {
	c, err := r.Cookie(j.name(r, base))
	if err != nil {
		return ""
	}
	return c.Value
}

// make builds one of the console's cookies: HttpOnly, SameSite=Strict; Secure and
// __Host- prefixed over https. maxAge < 0 deletes it.
func (j cookieJar) make(r *http.Request, base, value string, maxAge int) *http.Cookie {
	c := &http.Cookie{Name: base, Value: value, Path: "/ui/", MaxAge: maxAge, HttpOnly: true,
		SameSite: http.SameSiteStrictMode}
	if j.secure(r) {
		c.Name, c.Path, c.Secure = hostPrefix+base, "/", true
	}
	return c
}

// session is one sign-in. token is the bearer token the console sends to the API on the
// operator's behalf; it never leaves the process.
type session struct {
	id, csrf, token string
	principal       auth.Principal
	expires         time.Time

	mu    sync.Mutex
	flash flash // a one-shot message for the next page
}

// flash is the message the page after an action shows: what was done, or why the API
// refused it (shown as an alert, in another colour).
type flash struct {
	msg     string
	refused bool
}

// sessions holds the sign-ins of this process. Expired ones are dropped when met and at
// each sign-in, so the map needs no goroutine of its own.
type sessions struct {
	jar   cookieJar
	ttl   time.Duration
	clock func() time.Time

	mu sync.Mutex
	m  map[string]*session
}

func newSessions(jar cookieJar, ttl time.Duration, clock func() time.Time) *sessions {
	return &sessions{jar: jar, ttl: ttl, clock: clock, m: map[string]*session{}}
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
	id := ss.jar.get(r, sessionCookie)
	if id == "" {
		return nil
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	s := ss.m[id]
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
	s.flash = flash{msg: msg}
}

func (s *session) setRefusal(msg string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.flash = flash{msg: msg, refused: true}
}

func (s *session) takeFlash() flash {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.flash
	s.flash = flash{}
	return f
}
