package console

import (
	"crypto/subtle"
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// signIn serves the sign-in and sign-out pages: the only console pages reached without a
// session.
type signIn struct{ s *Server }

type loginPage struct {
	CSRF  string
	Error string
}

func (g signIn) page(w http.ResponseWriter, r *http.Request) {
	if g.s.sessions.fromRequest(r) != nil {
		http.Redirect(w, r, "/ui/", http.StatusSeeOther)
		return
	}
	g.show(w, r, http.StatusOK, "")
}

func (g signIn) show(w http.ResponseWriter, r *http.Request, status int, msg string) {
	csrf := randomToken()
	http.SetCookie(w, g.s.sessions.jar.make(r, loginCookie, csrf, 600))
	g.s.render(w, nil, status, "login", "Sign in", "", loginPage{CSRF: csrf, Error: msg})
}

// submit exchanges a bearer token for a session. The form's CSRF token must match the
// sign-in cookie, so another site cannot sign a browser in under its own token.
func (g signIn) submit(w http.ResponseWriter, r *http.Request) {
	c := g.s.sessions.jar.get(r, loginCookie)
	form := r.PostFormValue("csrf")
	if c == "" || form == "" || subtle.ConstantTimeCompare([]byte(c), []byte(form)) != 1 {
		g.s.signInOutcomes.WithLabelValues("stale_form").Inc()
		g.show(w, r, http.StatusForbidden, "The sign-in form expired; try again.")
		return
	}
	token := strings.TrimSpace(r.PostFormValue("token"))
	addr := clientAddr(r)
	if d := g.s.signIns.wait(addr, token); d > 0 {
		g.s.signInOutcomes.WithLabelValues("rate_limited").Inc()
		g.s.cfg.Audit.AuditSignIn(addr, "rate_limited", "too many failed sign-ins from this address")
		g.s.log.Info().Str("remote_addr", addr).Dur("retry_after_ms", d).Msg("console: sign-in throttled")
		w.Header().Set("Retry-After", strconv.Itoa(retryAfter(d)))
		g.show(w, r, http.StatusTooManyRequests,
			fmt.Sprintf("Too many failed sign-ins from this address; try again in %d seconds.", retryAfter(d)))
		return
	}
	p, err := g.s.cfg.Auth.Authenticate("Bearer " + token)
	if err != nil {
		g.s.signIns.failed(addr, token)
		g.s.signInOutcomes.WithLabelValues("unauthorized").Inc()
		g.s.cfg.Audit.AuditSignIn(addr, "unauthorized", "not a valid token")
		g.s.log.Info().Str("remote_addr", addr).Msg("console: sign-in with an unknown token refused")
		g.show(w, r, http.StatusUnauthorized, "That token is not valid.")
		return
	}
	g.s.signInOutcomes.WithLabelValues("ok").Inc()
	sess := g.s.sessions.create(token, p)
	http.SetCookie(w, g.s.sessions.jar.make(r, loginCookie, "", -1))
	http.SetCookie(w, g.s.sessions.jar.make(r, sessionCookie, sess.id, int(g.s.cfg.SessionTTL.Seconds())))
	g.s.log.Info().Str("actor", p.Name).Str("role", string(p.Role)).Msg("console: signed in")
	http.Redirect(w, r, "/ui/", http.StatusSeeOther)
}

func (g signIn) logout(w http.ResponseWriter, r *http.Request, sess *session) {
	g.s.sessions.remove(sess)
	http.SetCookie(w, g.s.sessions.jar.make(r, sessionCookie, "", -1))
	http.Redirect(w, r, "/ui/login", http.StatusSeeOther)
}
