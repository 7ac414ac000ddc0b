// Package adminclient is a typed client of the dlq-admin API, used by the dlq-admin CLI.
// It wraps the client generated from api/openapi.yaml (package oapi), which builds every
// request; this package decodes the answers. Every error the API answers comes back as
// an *api.Problem.
package adminclient

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/dlqops/dlq/internal/adminclient/oapi"
	"github.com/dlqops/dlq/internal/api"
	"github.com/dlqops/dlq/internal/store"
)

// Client calls one dlq-admin server with one token.
type Client struct {
	api *oapi.Client
	// streaming is the HTTP client without a whole-answer timeout, for an export, which
	// takes as long as its records take to stream.
	streaming *http.Client
}

// New returns a client of the server at baseURL (e.g. http://127.0.0.1:8080); hc may be
// nil for a default client.
func New(baseURL, token string, hc *http.Client) *Client {
	if hc == nil {
		hc = &http.Client{Timeout: time.Minute}
	}
	bearer := func(_ context.Context, req *http.Request) error {
		req.Header.Set("Authorization", "Bearer "+token)
		return nil
	}
	streaming := *hc
	streaming.Timeout = 0
	server := strings.TrimRight(baseURL, "/") + "/"
	return &Client{api: &oapi.Client{Server: server, Client: hc, RequestEditors: []oapi.RequestEditorFn{bearer}},
		streaming: &streaming}
}

// answer decodes a success into a T, or returns the API's problem.
func answer[T any](resp *http.Response, err error) (T, error) {
	var out T
	if err != nil {
		return out, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return out, err
	}
	if resp.StatusCode >= 300 {
		p := &api.Problem{Status: resp.StatusCode, Title: resp.Status}
		if json.Unmarshal(raw, p) != nil || p.Type == "" {
			p.Detail = strings.TrimSpace(string(raw))
		}
		return out, p
	}
	return out, json.Unmarshal(raw, &out)
}

// optional is nil for the zero value: a parameter or header the request leaves out.
func optional[T comparable](v T) *T {
	var zero T
	if v == zero {
		return nil
	}
	return &v
}

// ListRecords lists records by the API's filter, cursor and limit parameters.
func (c *Client) ListRecords(ctx context.Context, params api.ListRecordsParams) (api.RecordPage, error) {
	return answer[api.RecordPage](c.api.ListRecords(ctx, &params))
}

// ListIncidents lists the causes of the waiting records, largest first.
func (c *Client) ListIncidents(ctx context.Context, params api.ListIncidentsParams) (api.IncidentList, error) {
	return answer[api.IncidentList](c.api.ListIncidents(ctx, &params))
}

// GetRecord returns one record with its payload.
func (c *Client) GetRecord(ctx context.Context, id int64) (api.RecordDetail, error) {
	return answer[api.RecordDetail](c.api.GetRecord(ctx, id, &api.GetRecordParams{}))
}

// Replay asks for a replay of one record; idempotencyKey may be empty.
func (c *Client) Replay(ctx context.Context, id int64, req api.ReplayRequest, idempotencyKey string) (api.Job, error) {
	params := api.ReplayRecordParams{IdempotencyKey: optional(idempotencyKey)}
	return answer[api.Job](c.api.ReplayRecord(ctx, id, &params, req))
}

// Discard discards one record.
func (c *Client) Discard(ctx context.Context, id int64, reason string) (api.Record, error) {
	return answer[api.Record](c.api.DiscardRecord(ctx, id, api.DiscardRequest{Reason: reason}))
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
	return answer[api.DryRun](c.bulk(ctx, kind, req, ""))
}

// Bulk creates a bulk job; req.ConfirmCount must be the dry run's count.
func (c *Client) Bulk(ctx context.Context, kind store.JobKind, req api.BulkRequest, idempotencyKey string) (api.Job, error) {
	req.DryRun = false
	return answer[api.Job](c.bulk(ctx, kind, req, idempotencyKey))
}

// bulk sends req to the bulk endpoint of kind. req carries the fields of both kinds, so
// that the server names a field that is not for this one.
func (c *Client) bulk(ctx context.Context, kind store.JobKind, req api.BulkRequest, idempotencyKey string) (*http.Response, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	key := optional(idempotencyKey)
	switch kind {
	case store.JobReplay:
		return c.api.BulkReplayWithBody(ctx, &api.BulkReplayParams{IdempotencyKey: key}, "application/json", bytes.NewReader(body))
	case store.JobDiscard:
		return c.api.BulkDiscardWithBody(ctx, &api.BulkDiscardParams{IdempotencyKey: key}, "application/json", bytes.NewReader(body))
	}
	return nil, fmt.Errorf("no bulk %q: replay or discard", kind)
}

// ListJobs lists jobs below id before (0 for the newest).
func (c *Client) ListJobs(ctx context.Context, before int64, limit int) (api.JobList, error) {
	return answer[api.JobList](c.api.ListJobs(ctx, &api.ListJobsParams{Before: optional(before), Limit: &limit}))
}

// GetJob returns one job.
func (c *Client) GetJob(ctx context.Context, id int64) (api.Job, error) {
	return answer[api.Job](c.api.GetJob(ctx, id))
}

// CancelJob cancels a pending or running job.
func (c *Client) CancelJob(ctx context.Context, id int64) (api.Job, error) {
	return answer[api.Job](c.api.CancelJob(ctx, id))
}

// Stats returns the record counts.
func (c *Client) Stats(ctx context.Context) (api.Stats, error) {
	return answer[api.Stats](c.api.GetStats(ctx))
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
	return answer[api.Record](c.api.RetryRecordNow(ctx, id))
}

// Routes lists the route controls.
func (c *Client) Routes(ctx context.Context) (api.RouteList, error) {
	return answer[api.RouteList](c.api.ListRoutes(ctx))
}

// RouteAction pauses, resumes or runs a route now: action is "pause", "resume" or "run".
func (c *Client) RouteAction(ctx context.Context, route, action string) (api.RouteControl, error) {
	var resp *http.Response
	var err error
	switch action {
	case "pause":
		resp, err = c.api.PauseRoute(ctx, route)
	case "resume":
		resp, err = c.api.ResumeRoute(ctx, route)
	case "run":
		resp, err = c.api.RunRoute(ctx, route)
	default:
		return api.RouteControl{}, fmt.Errorf("no route action %q: pause, resume or run", action)
	}
	return answer[api.RouteControl](resp, err)
}

// RouteBreaker forces a route's breaker open or closed, or gives it back to auto.
func (c *Client) RouteBreaker(ctx context.Context, route string, mode api.BreakerRequestMode, reason string) (api.RouteControl, error) {
	return answer[api.RouteControl](c.api.SetRouteBreaker(ctx, route, api.BreakerRequest{Mode: mode, Reason: reason}))
}

// Runs lists recent redrive runs with their ledger, of one route when route is not empty.
func (c *Client) Runs(ctx context.Context, route string, limit int) (api.RunList, error) {
	return answer[api.RunList](c.api.ListRuns(ctx, &api.ListRunsParams{Route: optional(route), Limit: &limit}))
}

// Audit lists audit entries by the API's filters, before and limit parameters.
func (c *Client) Audit(ctx context.Context, params api.ListAuditParams) (api.AuditList, error) {
	return answer[api.AuditList](c.api.ListAudit(ctx, &params))
}
