package console

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/dlqops/dlq/internal/api"
	"github.com/dlqops/dlq/internal/store"
)

type jobsPage struct {
	Jobs       []api.Job
	NextBefore int64
}

func (s *Server) jobs(w http.ResponseWriter, r *http.Request, sess *session) {
	var list api.JobList
	if _, err := s.call(r, sess, http.MethodGet, "/v1/jobs", pageQuery(r), nil, &list); err != nil {
		s.failAPI(w, r, sess, err)
		return
	}
	s.render(w, sess, http.StatusOK, "jobs", "Jobs", "jobs", jobsPage{Jobs: list.Jobs, NextBefore: list.NextBefore})
}

// pageQuery keeps the before and limit paging of jobs and the audit log.
func pageQuery(r *http.Request) url.Values {
	q := url.Values{}
	for _, name := range []string{"before", "limit"} {
		if v := r.URL.Query().Get(name); v != "" {
			q.Set(name, v)
		}
	}
	return q
}

// progress is a job's progress as the job page shows it and its script polls it.
type progress struct {
	Status   store.JobStatus `json:"status"`
	Total    int64           `json:"total"`
	Done     int64           `json:"done"`
	Failed   int64           `json:"failed"`
	Skipped  int64           `json:"skipped"`
	Percent  int64           `json:"percent"`
	Rate     string          `json:"rate"`
	ETA      string          `json:"eta"`
	Finished bool            `json:"finished"`
}

func (s *Server) progressOf(j *api.Job) progress {
	p := progress{Status: j.Status, Total: j.Total, Done: j.Done, Failed: j.Failed, Skipped: j.Skipped, Rate: "—", ETA: "—",
		Finished: j.FinishedAt != nil}
	// Skipped records (no longer parked or scheduled when the job met them) are handled too.
	handled := j.Done + j.Failed + j.Skipped
	if j.Total > 0 {
		p.Percent = min(100, handled*100/j.Total)
	}
	if j.StartedAt != nil {
		end := s.cfg.Clock()
		if j.FinishedAt != nil {
			end = *j.FinishedAt
		}
		if secs := end.Sub(*j.StartedAt).Seconds(); secs > 0 && handled > 0 {
			rate := float64(handled) / secs
			p.Rate = fmt.Sprintf("%.0f records/s", rate)
			if !p.Finished && j.Total > handled {
				p.ETA = (time.Duration(float64(j.Total-handled)/rate) * time.Second).String()
			}
		}
	}
	if p.Finished {
		p.ETA = "finished"
	}
	return p
}

type jobPage struct {
	api.Job
	Progress  progress
	Cancelled bool
	Active    bool
}

func (s *Server) loadJob(r *http.Request, sess *session) (api.Job, error) {
	var j api.Job
	_, err := s.call(r, sess, http.MethodGet, "/v1/jobs/"+url.PathEscape(r.PathValue("id")), nil, nil, &j)
	return j, err
}

func (s *Server) job(w http.ResponseWriter, r *http.Request, sess *session) {
	j, err := s.loadJob(r, sess)
	if err != nil {
		s.failAPI(w, r, sess, err)
		return
	}
	page := jobPage{Job: j, Progress: s.progressOf(&j), Active: j.Status == store.JobPending || j.Status == store.JobRunning}
	s.render(w, sess, http.StatusOK, "job", "Job "+strconv.FormatInt(j.ID, 10), "jobs", page)
}

// jobProgress is the JSON the job page's script polls for live progress.
func (s *Server) jobProgress(w http.ResponseWriter, r *http.Request, sess *session) {
	j, err := s.loadJob(r, sess)
	if err != nil {
		s.failAPI(w, r, sess, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(s.progressOf(&j)) // the client went away; nothing to do
}

func (s *Server) cancelJob(w http.ResponseWriter, r *http.Request, sess *session) {
	_, err := s.call(r, sess, http.MethodPost, "/v1/jobs/"+url.PathEscape(r.PathValue("id"))+"/cancel", nil, nil, nil)
	s.actionDone(w, r, sess, "/ui/jobs/"+url.PathEscape(r.PathValue("id")), err, "Job cancelled.")
}
