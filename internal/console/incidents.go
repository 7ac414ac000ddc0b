package console

import (
	"html/template"
	"net/http"
	"net/url"

	"github.com/dlqops/dlq/internal/api"
)

// incidentRow is an incident with the console's links: its records, and the same view
// opened at its bulk form, whose first step is the dry run's count.
type incidentRow struct {
	api.Incident
	Records, Bulk template.URL
	// Trend is a bar per hour of its last 24, for a small inline SVG.
	Trend []trendBar
}

// trendBar is one hour of an incident's trend, in SVG user units (4 wide, 16 high).
type trendBar struct {
	Count   int64
	X, Y, H int
}

// trendBars scales an incident's hourly counts to its busiest hour; a non-empty hour
// stays visible.
func trendBars(counts []int64) []trendBar {
	const height = 16
	var most int64 = 1
	for _, n := range counts {
		most = max(most, n)
	}
	bars := make([]trendBar, len(counts))
	for i, n := range counts {
		h := int(n * height / most)
		if n > 0 {
			h = max(h, 1)
		}
		bars[i] = trendBar{Count: n, X: 4 * i, Y: height - h, H: h}
	}
	return bars
}

type incidentsPage struct {
	Incidents []incidentRow
	// Total is how many incidents the filter selects, beyond the ones listed.
	Total           int64
	TotalIsEstimate bool
	// Filter is the view's filter, for the form.
	Filter url.Values
}

// incidents lists the causes of the waiting records the session's token may see.
func (s *Server) incidents(w http.ResponseWriter, r *http.Request, sess *session) {
	f := filterQuery(r.URL.Query())
	var list api.IncidentList
	if _, err := s.call(r, sess, http.MethodGet, "/v1/incidents", f, nil, &list); err != nil {
		s.failAPI(w, r, sess, err)
		return
	}
	view := incidentsPage{Filter: f, Incidents: incidentRows(list.Incidents), Total: list.Total, TotalIsEstimate: list.TotalIsEstimate}
	s.render(w, sess, http.StatusOK, "incidents", "Incidents", "incidents", view)
}

func incidentRows(incs []api.Incident) []incidentRow {
	rows := make([]incidentRow, len(incs))
	for i, in := range incs {
		rows[i] = incidentRow{Incident: in, Records: incidentLink(in, "parked,scheduled", ""),
			Bulk:  incidentLink(in, "parked", "#bulk"),
			Trend: trendBars(in.Last24H)}
	}
	return rows
}

// incidentLink is the records view of an incident's records of statuses: all of them, or
// the parked ones a bulk job acts on. Built from url.Values, so that it is well formed
// whatever the route's name holds.
func incidentLink(in api.Incident, statuses, fragment string) template.URL {
	q := url.Values{"status": {statuses}, "fingerprint": {in.Fingerprint}, "route": {in.Route}}
	return template.URL("/ui/records?" + q.Encode() + fragment)
}
