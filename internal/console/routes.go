package console

import (
	"net/http"
	"net/url"

	"github.com/dlqops/dlq/internal/api"
)

type routesPage struct {
	Routes []routeRow
	// Breakers are the routes whose breaker holds their records, for the banner.
	Breakers []breakerBanner
}

func (s *Server) routes(w http.ResponseWriter, r *http.Request, sess *session) {
	var rl api.RouteList
	var runs api.RunList
	if _, err := s.call(r, sess, http.MethodGet, "/v1/routes", nil, nil, &rl); err != nil {
		s.failAPI(w, r, sess, err)
		return
	}
	if _, err := s.call(r, sess, http.MethodGet, "/v1/runs", url.Values{"limit": {"100"}}, nil, &runs); err != nil {
		s.failAPI(w, r, sess, err)
		return
	}
	page := routesPage{Breakers: breakerBanners(rl.Routes)}
	for _, rc := range rl.Routes {
		row := routeRow{RouteControl: rc}
		for i := range runs.Runs { // newest first
			if runs.Runs[i].Route == rc.Route {
				row.LastRun = &runs.Runs[i]
				break
			}
		}
		page.Routes = append(page.Routes, row)
	}
	s.render(w, sess, http.StatusOK, "routes", "Routes", "routes", page)
}

var routeMessages = map[string]string{
	"pause":  "Route paused: workers stop redriving it after their current batch.",
	"resume": "Route resumed.",
	"run":    "Run requested: a worker runs the route now.",
}

func (s *Server) routeAction(w http.ResponseWriter, r *http.Request, sess *session) {
	action := r.PathValue("action")
	msg, ok := routeMessages[action]
	if !ok {
		s.fail(w, r, sess, http.StatusNotFound, "There is no such route action.")
		return
	}
	_, err := s.call(r, sess, http.MethodPost, "/v1/routes/"+url.PathEscape(r.PathValue("route"))+"/"+action, nil, nil, nil)
	s.actionDone(w, r, sess, "/ui/routes", err, msg)
}

type runsPage struct {
	Runs  []api.Run
	Route string
	// Routes are the routes whose runs are listed, with their schedule, last run end and
	// next run: the runs list merges idle runs, so it alone does not show them.
	Routes []api.RouteControl
}

func (s *Server) runs(w http.ResponseWriter, r *http.Request, sess *session) {
	q := url.Values{}
	route := r.URL.Query().Get("route")
	if route != "" {
		q.Set("route", route)
	}
	if l := r.URL.Query().Get("limit"); l != "" {
		q.Set("limit", l)
	}
	var runs api.RunList
	if _, err := s.call(r, sess, http.MethodGet, "/v1/runs", q, nil, &runs); err != nil {
		s.failAPI(w, r, sess, err)
		return
	}
	var rl api.RouteList
	if _, err := s.call(r, sess, http.MethodGet, "/v1/routes", nil, nil, &rl); err != nil {
		s.failAPI(w, r, sess, err)
		return
	}
	page := runsPage{Runs: runs.Runs, Route: route}
	for _, rc := range rl.Routes {
		if route == "" || rc.Route == route {
			page.Routes = append(page.Routes, rc)
		}
	}
	s.render(w, sess, http.StatusOK, "runs", "Runs", "runs", page)
}

// auditParams are the audit log's filters of the API; the console's URLs use the same names.
var auditParams = []string{"action", "actor", "route", "topic", "record_id", "job_id", "from", "to"}

type auditPage struct {
	// Items are the entries, a job's batch rows folded unless ShowBatches.
	Items       []auditItem
	ShowBatches bool
	NextBefore  int64
	// Filter is the view's filter, for the form and the paging link.
	Filter url.Values
}

func (s *Server) audit(w http.ResponseWriter, r *http.Request, sess *session) {
	f := url.Values{}
	for _, name := range auditParams {
		if v := r.URL.Query().Get(name); v != "" {
			f.Set(name, v)
		}
	}
	q := pageQuery(r)
	for k, v := range f {
		q[k] = v
	}
	var list auditRows
	if _, err := s.call(r, sess, http.MethodGet, "/v1/audit", q, nil, &list); err != nil {
		s.failAPI(w, r, sess, err)
		return
	}
	// A view of one record's or one job's entries shows each of them: that is what it was
	// asked for.
	page := auditPage{ShowBatches: r.URL.Query().Get("batches") == "show", NextBefore: list.NextBefore, Filter: f}
	if page.ShowBatches || f.Has("record_id") || f.Has("job_id") {
		if page.ShowBatches {
			f.Set("batches", "show") // kept by the form and the paging link
		}
		for i := range list.Entries {
			page.Items = append(page.Items, auditItem{Entry: &list.Entries[i]})
		}
	} else {
		page.Items = foldBatches(list.Entries)
	}
	s.render(w, sess, http.StatusOK, "audit", "Audit log", "audit", page)
}
