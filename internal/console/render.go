package console

import (
	"bytes"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"path"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/dlqops/dlq/internal/auth"
)

// view is what every page template gets: the page's own data in Data.
type view struct {
	Title      string
	Nav        string
	Signed     bool
	Principal  auth.Principal
	CanOperate bool // operator or admin: single-record actions, jobs, routes
	CanBulk    bool // admin: bulk replay and discard
	CSRF       string
	Flash      string
	// FlashRefused: Flash says why the API refused the last action (an alert), not what it did.
	FlashRefused bool
	Data         any
}

var funcs = template.FuncMap{
	"exact":    exact,
	"num":      thousands,
	"firstIDs": firstIDs,
	"moreIDs":  moreIDs,
	// link returns the URL path?query with name set to value (removed when empty).
	"link": func(p string, q url.Values, name, value string) string {
		q2 := url.Values{}
		for k, vs := range q {
			q2[k] = vs
		}
		if value == "" {
			q2.Del(name)
		} else {
			q2.Set(name, value)
		}
		if len(q2) == 0 {
			return p
		}
		return p + "?" + q2.Encode()
	},
	"pathEscape": url.PathEscape,
	"list":       func(v ...string) []string { return v },
	"join":       strings.Join,
	"tallyTable": newTallyTable,
	"payloadBlock": func(title, id string, p payload) payloadBlock {
		return payloadBlock{Title: title, ID: id, P: p}
	},
}

// parsePages parses each page template with the layout.
// when, in every page, is a time reading relatively to now, the console's clock.
func parsePages(now func() time.Time) (map[string]*template.Template, error) {
	names, err := fs.Glob(templateFS, "templates/*.html")
	if err != nil {
		return nil, err
	}
	pages := map[string]*template.Template{}
	for _, n := range names {
		base := path.Base(n)
		if base == "layout.html" || strings.HasPrefix(base, "_") {
			continue // parsed with every page: the layout, and the parts (_*.html) pages share
		}
		t, err := template.New(base).Funcs(funcs).Funcs(template.FuncMap{"when": timeElement(now)}).ParseFS(templateFS, "templates/layout.html", "templates/_*.html", n)
		if err != nil {
			return nil, fmt.Errorf("console: template %s: %w", base, err)
		}
		pages[strings.TrimSuffix(base, ".html")] = t
	}
	return pages, nil
}

// renderer renders the console's pages from their templates: a page, an error page, the
// redirect after an action. Safe from any request's goroutine: it only reads.
type renderer struct {
	pages map[string]*template.Template
	log   zerolog.Logger
}

// render writes a page. The page is rendered into a buffer first, so a template error
// becomes a 500 rather than half a page.
func (s *renderer) render(w http.ResponseWriter, sess *session, status int, page, title, nav string, data any) {
	v := view{Title: title, Nav: nav, Data: data}
	if sess != nil {
		f := sess.takeFlash()
		v.Signed, v.Principal, v.CSRF, v.Flash, v.FlashRefused = true, sess.principal, sess.csrf, f.msg, f.refused
		v.CanOperate = sess.principal.Role.Allows(auth.Operator)
		v.CanBulk = sess.principal.Role.Allows(auth.Admin)
	}
	var buf bytes.Buffer
	if err := s.pages[page].ExecuteTemplate(&buf, "layout", v); err != nil {
		s.log.Error().Err(err).Str("page", page).Msg("console: render")
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = buf.WriteTo(w) // the client went away; nothing to do
}

// errorPage is the data of error.html.
type errorPage struct {
	Status  int
	Message string
	Detail  string
}

// fail renders an error page.
func (s *renderer) fail(w http.ResponseWriter, _ *http.Request, sess *session, status int, msg string) {
	s.render(w, sess, status, "error", http.StatusText(status), "", errorPage{Status: status, Message: msg})
}

// failAPI renders what the API answered, or a generic 500 for anything else (logged, not
// shown).
func (s *renderer) failAPI(w http.ResponseWriter, r *http.Request, sess *session, err error) {
	var ae *apiError
	if errors.As(err, &ae) {
		p := ae.problem
		detail := p.Detail
		if p.Field != "" {
			detail = p.Field + ": " + detail
		}
		s.render(w, sess, p.Status, "error", p.Title, "", errorPage{Status: p.Status, Message: p.Title, Detail: detail})
		return
	}
	s.log.Error().Err(err).Str("path", r.URL.Path).Msg("console: page failed")
	s.fail(w, r, sess, http.StatusInternalServerError, "Something went wrong; the server log has the cause.")
}

// actionDone redirects after a state change, with a message for the next page; an API
// refusal is shown as that page's message too.
func (s *renderer) actionDone(w http.ResponseWriter, r *http.Request, sess *session, to string, err error, ok string) {
	var ae *apiError
	switch {
	case err == nil:
		sess.setFlash(ok)
	case errors.As(err, &ae):
		p := ae.problem
		msg := fmt.Sprintf("Refused (%d %s)", p.Status, p.Title)
		if p.Detail != "" {
			msg += ": " + p.Detail
		}
		sess.setRefusal(msg)
	default:
		s.failAPI(w, r, sess, err)
		return
	}
	http.Redirect(w, r, to, http.StatusSeeOther)
}
