package console

import (
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/dlqops/dlq/internal/api"
	"github.com/dlqops/dlq/internal/store"
)

// tally is one row of an overview table: parked and scheduled counts of a name.
type tally struct {
	Name              string
	Parked, Scheduled int64
	// Records lists the parked records of this row.
	Records template.URL
}

// bar is one bar of the overview chart, in SVG user units.
type bar struct {
	Label       string
	Count       int64
	Y, Width    int
	LabelY, TxY int
}

// timeBar is one hour of the parked-over-time chart, in SVG user units: the records stored
// in it, and over it those still parked.
type timeBar struct {
	api.ParkedPoint
	X, StoredY, StoredH, ParkedY, ParkedH int
	// Label is the hour under every sixth bar.
	Label string
}

type routeRow struct {
	api.RouteControl
	LastRun *api.Run
}

type overviewPage struct {
	Parked, Scheduled int64
	OldestParked      *time.Time
	ByReason          []tally
	ByDLQTopic        []tally
	ByOriginalTopic   []tally
	Chart             []bar
	ChartHeight       int
	Timeline          []timeBar
	Routes            []routeRow
	Jobs              []api.Job
	// Incidents are the largest causes of the waiting records.
	Incidents []incidentRow
	// Scoped: the token sees some topics only, and not the routes.
	Scoped bool
	// Breakers are the routes whose breaker holds their records, for the banner.
	Breakers []breakerBanner
}

// overviewCalls bounds the overview's API calls in progress at once: each counts against
// its token's limits.console_max_concurrent (16 by default), which five overviews loading
// at once in an operator's tabs still fit.
const overviewCalls = 3

func (s *Server) overview(w http.ResponseWriter, r *http.Request, sess *session) {
	var st api.Stats
	var over api.ParkedOverTime
	var rl api.RouteList
	var runs api.RunList
	var jobs api.JobList
	var incidents api.IncidentList
	type apiGet struct {
		path string
		q    url.Values
		out  any
	}
	gets := []apiGet{{"/v1/stats", nil, &st}, {"/v1/stats/parked-over-time", nil, &over},
		{"/v1/jobs", url.Values{"limit": {"50"}}, &jobs}, {"/v1/incidents", url.Values{"limit": {"5"}}, &incidents}}
	// Routes and runs span every topic, so the API shows them to unscoped tokens only.
	if len(sess.principal.Topics) == 0 {
		gets = append(gets, apiGet{"/v1/routes", nil, &rl}, apiGet{"/v1/runs", url.Values{"limit": {"100"}}, &runs})
	}
	// The calls are independent: made overviewCalls at a time, the page waits for about
	// the two slowest, not for their sum.
	var g errgroup.Group
	g.SetLimit(overviewCalls)
	for _, c := range gets {
		g.Go(func() error {
			_, err := s.call(r, sess, http.MethodGet, c.path, c.q, nil, c.out)
			return err
		})
	}
	if err := g.Wait(); err != nil {
		s.failAPI(w, r, sess, err)
		return
	}
	page := overviewPage{OldestParked: st.OldestParked, Scoped: len(sess.principal.Topics) > 0, Breakers: breakerBanners(rl.Routes)}
	by := func(rows []tally, name, param string, sc api.StatCount) []tally {
		i := slices.IndexFunc(rows, func(t tally) bool { return t.Name == name })
		if i < 0 {
			// Built from url.Values, so the URL is well formed whatever the name holds.
			link := template.URL("/ui/records?" + url.Values{"status": {"parked"}, param: {name}}.Encode())
			rows = append(rows, tally{Name: name, Records: link})
			i = len(rows) - 1
		}
		switch sc.Status {
		case store.StatusParked:
			rows[i].Parked += sc.Count
		case store.StatusScheduled:
			rows[i].Scheduled += sc.Count
		}
		return rows
	}
	for _, sc := range st.Counts {
		switch sc.Status {
		case store.StatusParked:
			page.Parked += sc.Count
		case store.StatusScheduled:
			page.Scheduled += sc.Count
		default:
			continue
		}
		page.ByReason = by(page.ByReason, string(sc.Reason), "reason", sc)
		page.ByDLQTopic = by(page.ByDLQTopic, sc.DLQTopic, "dlq_topic", sc)
		page.ByOriginalTopic = by(page.ByOriginalTopic, sc.OriginalTopic, "original_topic", sc)
	}
	for _, rows := range [][]tally{page.ByReason, page.ByDLQTopic, page.ByOriginalTopic} {
		slices.SortFunc(rows, func(a, b tally) int { return int(b.Parked+b.Scheduled) - int(a.Parked+a.Scheduled) })
	}
	page.Incidents = incidentRows(incidents.Incidents)
	page.Chart, page.ChartHeight = chart(page.ByReason)
	page.Timeline = timeline(over.Points)
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
	for _, j := range jobs.Jobs {
		if j.Status == store.JobPending || j.Status == store.JobRunning {
			page.Jobs = append(page.Jobs, j)
		}
	}
	s.render(w, sess, http.StatusOK, "overview", "Overview", "overview", page)
}

// chart lays out a horizontal bar per reason, scaled to the largest parked count: drawn
// as inline SVG on the server, so the page needs no script for it.
func chart(rows []tally) ([]bar, int) {
	const rowHeight, maxWidth = 28, 480
	var most int64
	for _, t := range rows {
		most = max(most, t.Parked)
	}
	var bars []bar
	for _, t := range rows {
		if t.Parked == 0 {
			continue
		}
		y := len(bars) * rowHeight
		bars = append(bars, bar{Label: t.Name, Count: t.Parked, Y: y + 4, LabelY: y + 18, TxY: y + 18,
			Width: max(2, int(t.Parked*maxWidth/most))})
	}
	return bars, len(bars)*rowHeight + 4
}

// timeline lays out a vertical bar per hour, scaled to the largest hour, for the overview's
// 720 × 144 SVG: what was stored, and over it what is still parked.
func timeline(points []api.ParkedPoint) []timeBar {
	const plot, base = 120, 124 // bar area height, its bottom line
	var most int64 = 1
	for _, p := range points {
		most = max(most, p.Stored)
	}
	step := 720 / max(1, len(points))
	out := make([]timeBar, len(points))
	for i, p := range points {
		sh, ph := int(p.Stored*plot/most), int(p.StillParked*plot/most)
		if p.Stored > 0 {
			sh = max(sh, 2) // a non-empty hour stays visible
		}
		if p.StillParked > 0 {
			ph = max(ph, 2)
		}
		out[i] = timeBar{ParkedPoint: p, X: i * step, StoredY: base - sh, StoredH: sh, ParkedY: base - ph, ParkedH: ph}
		if i%6 == 0 {
			out[i].Label = p.Start.UTC().Format("15:04")
		}
	}
	return out
}

// tallyTable is one of the overview's count tables.
type tallyTable struct {
	Title, ID string
	Rows      []tally
}

func newTallyTable(title, id string, rows []tally) tallyTable {
	return tallyTable{Title: title, ID: id, Rows: rows}
}
