// Package adminclient is a typed client of the dlq-admin API, used by the dlq-admin CLI.
// Every error the API answers comes back as an *api.Problem.
package adminclient

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/dlqops/dlq/internal/api"
	"github.com/dlqops/dlq/internal/store"
)

// Client calls one dlq-admin server with one token.
type Client struct {
	base  string
	token string
	http  *http.Client
}

// New returns a client of the server at baseURL (e.g. http://127.0.0.1:8080); hc may be
// nil for a default client.
func New(baseURL, token string, hc *http.Client) *Client {
	if hc == nil {
		hc = &http.Client{Timeout: time.Minute}
	}
	return &Client{base: strings.TrimRight(baseURL, "/"), token: token, http: hc}
}

// do sends body (JSON, or none when nil) and decodes a success into out.
func (c *Client) do(ctx context.Context, method, path string, body, out any, hdr ...string) error {
	var rd io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	for i := 0; i+1 < len(hdr); i += 2 {
		if hdr[i+1] != "" {
			req.Header.Set(hdr[i], hdr[i+1])
		}
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode >= 300 {
		p := &api.Problem{Status: resp.StatusCode, Title: resp.Status}
		if json.Unmarshal(raw, p) != nil || p.Type == "" {
			p.Detail = strings.TrimSpace(string(raw))
		}
		return p
	}
	return json.Unmarshal(raw, out)
}

// ListRecords lists records; q holds the API's filter, cursor and limit parameters.
func (c *Client) ListRecords(ctx context.Context, q url.Values) (api.RecordPage, error) {
	var out api.RecordPage
	return out, c.do(ctx, "GET", "/v1/records?"+q.Encode(), nil, &out)
}

// GetRecord returns one record with its payload.
func (c *Client) GetRecord(ctx context.Context, id int64) (api.RecordDetail, error) {
	var out api.RecordDetail
	return out, c.do(ctx, "GET", "/v1/records/"+strconv.FormatInt(id, 10), nil, &out)
}

// Replay asks for a replay of one record; idempotencyKey may be empty.
func (c *Client) Replay(ctx context.Context, id int64, req api.ReplayRequest, idempotencyKey string) (api.Job, error) {
	var out api.Job
	return out, c.do(ctx, "POST", fmt.Sprintf("/v1/records/%d/replay", id), req, &out, "Idempotency-Key", idempotencyKey)
}

// Discard discards one record.
func (c *Client) Discard(ctx context.Context, id int64, reason string) (api.Record, error) {
	var out api.Record
	return out, c.do(ctx, "POST", fmt.Sprintf("/v1/records/%d/discard", id), api.DiscardRequest{Reason: reason}, &out)
}

// BulkCount is the dry run of a bulk request: how many records it selects.
func (c *Client) BulkCount(ctx context.Context, kind store.JobKind, req api.BulkRequest) (int64, error) {
	out, err := c.BulkDryRun(ctx, kind, req)
	return out.Count, err
}

// BulkDryRun is the dry run of a bulk request: how many records it selects, and how many
// of those a replay refuses for having no payload.
func (c *Client) BulkDryRun(ctx context.Context, kind store.JobKind, req api.BulkRequest) (api.DryRun, error) {
	req.DryRun = true
	var out api.DryRun
	return out, c.do(ctx, "POST", "/v1/bulk/"+string(kind), req, &out)
}

// Bulk creates a bulk job; req.ConfirmCount must be the dry run's count.
func (c *Client) Bulk(ctx context.Context, kind store.JobKind, req api.BulkRequest, idempotencyKey string) (api.Job, error) {
	req.DryRun = false
	var out api.Job
	return out, c.do(ctx, "POST", "/v1/bulk/"+string(kind), req, &out, "Idempotency-Key", idempotencyKey)
}

// ListJobs lists jobs below id before (0 for the newest).
func (c *Client) ListJobs(ctx context.Context, before int64, limit int) (api.JobList, error) {
	q := url.Values{"limit": {strconv.Itoa(limit)}}
	if before > 0 {
		q.Set("before", strconv.FormatInt(before, 10))
	}
	var out api.JobList
	return out, c.do(ctx, "GET", "/v1/jobs?"+q.Encode(), nil, &out)
}

// GetJob returns one job.
func (c *Client) GetJob(ctx context.Context, id int64) (api.Job, error) {
	var out api.Job
	return out, c.do(ctx, "GET", "/v1/jobs/"+strconv.FormatInt(id, 10), nil, &out)
}

// CancelJob cancels a pending or running job.
func (c *Client) CancelJob(ctx context.Context, id int64) (api.Job, error) {
	var out api.Job
	return out, c.do(ctx, "POST", fmt.Sprintf("/v1/jobs/%d/cancel", id), nil, &out)
}

// Stats returns the record counts.
func (c *Client) Stats(ctx context.Context) (api.Stats, error) {
	var out api.Stats
	return out, c.do(ctx, "GET", "/v1/stats", nil, &out)
}

// Finished reports whether a job has ended.
func Finished(j api.Job) bool {
	return j.Status != store.JobPending && j.Status != store.JobRunning
}

// WaitJob polls a job every interval, calling progress with each state, until it ends or
// ctx does.
func (c *Client) WaitJob(ctx context.Context, id int64, interval time.Duration, progress func(api.Job)) (api.Job, error) {
	for {
		j, err := c.GetJob(ctx, id)
		if err != nil {
			return j, err
		}
		progress(j)
		if Finished(j) {
			return j, nil
		}
		select {
		case <-ctx.Done():
			return j, ctx.Err()
		case <-time.After(interval):
		}
	}
}

// RetryNow makes a scheduled record due now.
func (c *Client) RetryNow(ctx context.Context, id int64) (api.Record, error) {
	var out api.Record
	return out, c.do(ctx, "POST", fmt.Sprintf("/v1/records/%d/retry-now", id), nil, &out)
}

// Routes lists the route controls.
func (c *Client) Routes(ctx context.Context) (api.RouteList, error) {
	var out api.RouteList
	return out, c.do(ctx, "GET", "/v1/routes", nil, &out)
}

// RouteAction pauses, resumes or runs a route now: action is "pause", "resume" or "run".
func (c *Client) RouteAction(ctx context.Context, route, action string) (api.RouteControl, error) {
	var out api.RouteControl
	return out, c.do(ctx, "POST", "/v1/routes/"+url.PathEscape(route)+"/"+action, nil, &out)
}

// Runs lists recent redrive runs with their ledger, of one route when route is not empty.
func (c *Client) Runs(ctx context.Context, route string, limit int) (api.RunList, error) {
	q := url.Values{"limit": {strconv.Itoa(limit)}}
	if route != "" {
		q.Set("route", route)
	}
	var out api.RunList
	return out, c.do(ctx, "GET", "/v1/runs?"+q.Encode(), nil, &out)
}

// Audit lists audit entries below id before (0 for the newest).
func (c *Client) Audit(ctx context.Context, before int64, limit int, filter url.Values) (api.AuditList, error) {
	q := url.Values{"limit": {strconv.Itoa(limit)}}
	for k, v := range filter {
		q[k] = v
	}
	if before > 0 {
		q.Set("before", strconv.FormatInt(before, 10))
	}
	var out api.AuditList
	return out, c.do(ctx, "GET", "/v1/audit?"+q.Encode(), nil, &out)
}
