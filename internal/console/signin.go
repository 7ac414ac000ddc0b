package console

import (
	"crypto/subtle"
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

type loginPage struct {
	CSRF  string
	Error string
}

func (s *Server) loginPage(w http.ResponseWriter, r *http.Request) {
	if s.sessions.fromRequest(r) != nil {
		http.Redirect(w, r, "/ui/", http.StatusSeeOther)
		return
	}
	s.showLogin(w, r, http.StatusOK, "")
}

func (s *Server) showLogin(w http.ResponseWriter, r *http.Request, status int, msg string) {
	csrf := randomToken()
	http.SetCookie(w, s.sessions.jar.make(r, loginCookie, csrf, 600))
	s.render(w, nil, status, "login", "Sign in", "", loginPage{CSRF: csrf, Error: msg})
}

// login exchanges a bearer token for a session. The form's CSRF token must match the
// sign-in cookie, so another site cannot sign a browser in under its own token.
func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	c := s.sessions.jar.get(r, loginCookie)
	form := r.PostFormValue("csrf")
	if c == "" || form == "" || subtle.ConstantTimeCompare([]byte(c), []byte(form)) != 1 {
		s.signInOutcomes.WithLabelValues("stale_form").Inc()
		s.showLogin(w, r, http.StatusForbidden, "The sign-in form expired; try again.")
		return
	}
	token := strings.TrimSpace(r.PostFormValue("token"))
	addr := clientAddr(r)
	if d := s.signIns.wait(addr, token); d > 0 {
		s.signInOutcomes.WithLabelValues("rate_limited").Inc()
		s.cfg.Audit.AuditSignIn(addr, "rate_limited", "too many failed sign-ins from this address")
		s.log.Info().Str("remote_addr", addr).Dur("retry_after_ms", d).Msg("console: sign-in throttled")
		w.Header().Set("Retry-After", strconv.Itoa(retryAfter(d)))
		s.showLogin(w, r, http.StatusTooManyRequests,
			fmt.Sprintf("Too many failed sign-ins from this address; try again in %d seconds.", retryAfter(d)))
		return
	}
	p, err := s.cfg.Auth.Authenticate("Bearer " + token)
	if err != nil {
		s.signIns.failed(addr, token)
		s.signInOutcomes.WithLabelValues("unauthorized").Inc()
		s.cfg.Audit.AuditSignIn(addr, "unauthorized", "not a valid token")
		s.log.Info().Str("remote_addr", addr).Msg("console: sign-in with an unknown token refused")
		s.showLogin(w, r, http.StatusUnauthorized, "That token is not valid.")
		return
	}
	s.signInOutcomes.WithLabelValues("ok").Inc()
	sess := s.sessions.create(token, p)
	http.SetCookie(w, s.sessions.jar.make(r, loginCookie, "", -1))
	http.SetCookie(w, s.sessions.jar.make(r, sessionCookie, sess.id, int(s.cfg.SessionTTL.Seconds())))
	s.log.Info().Str("actor", p.Name).Str("role", string(p.Role)).Msg("console: signed in")
	http.Redirect(w, r, "/ui/", http.StatusSeeOther)
}

func (s *Server) logout(w http.ResponseWriter, r *http.Request, sess *session) {
	s.sessions.remove(sess)
	http.SetCookie(w, s.sessions.jar.make(r, sessionCookie, "", -1))
	http.Redirect(w, r, "/ui/login", http.StatusSeeOther)
}
