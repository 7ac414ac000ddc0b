package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/api"
	"github.com/dlqops/dlq/internal/store"
)

// The scope × endpoint matrix (OWASP API1, broken object level authorization): for every
// endpoint, the token scoped to orders reaches orders' objects and nothing of payments.
// Records and jobs outside its topics answer 404, lists leave them out, routes and runs
// (which concern DLQ topics of any original topic) answer 403. A new endpoint fails the
// test until it has its row.
func TestScopeMatrix(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	require.NoError(t, b.store.RegisterRoutes(ctx, []string{"orders-route"}, "test"))
	o := b.park("orders", 8)
	p := b.park("payments", 8)
	submit := func(ids ...int64) int64 {
		job, _, err := b.store.SubmitJob(ctx, store.JobRequest{JobSpec: store.JobSpec{Kind: store.JobReplay, RecordIDs: ids, ConfirmedCount: int64(len(ids))}}, store.Actor{Name: "otto"})
		require.NoError(t, err)
		return job.ID
	}
	ordersJob, paymentsJob, mixedJob := submit(o[0]), submit(p[0]), submit(o[7], p[7])
	anyJob, _, err := b.store.SubmitJob(ctx, store.JobRequest{JobSpec: store.JobSpec{Kind: store.JobReplay,
		Filter: &store.Filter{Statuses: []store.Status{store.StatusParked}}, ConfirmedCount: 1}}, store.Actor{Name: "ada"})
	require.NoError(t, err)
	r := b.do("POST", path("/v1/records/%d/discard", p[1]), operatorToken, api.DiscardRequest{Reason: "customer jane@example.com left"})
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	r = b.do("POST", path("/v1/records/%d/discard", o[1]), operatorToken, api.DiscardRequest{Reason: "orders cleanup"})
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)

	notFound := func(t *testing.T, r response) {
		t.Helper()
		require.Equal(t, http.StatusNotFound, r.status, "%s", r.body)
		require.Equal(t, "urn:dlq:problem:not-found", r.problem(t).Type)
	}
	forbidden := func(t *testing.T, r response) {
		t.Helper()
		require.Equal(t, http.StatusForbidden, r.status, "%s", r.body)
		require.Equal(t, "urn:dlq:problem:forbidden", r.problem(t).Type)
	}
	reached := func(t *testing.T, r response) {
		t.Helper()
		require.NotContains(t, []int{401, 403, 404}, r.status, "%s", r.body)
		require.Less(t, r.status, 500, "%s", r.body)
	}
	jobIDs := func(r response) []int64 {
		var l api.JobList
		r.decode(t, &l)
		var ids []int64
		for _, j := range l.Jobs {
			ids = append(ids, j.ID)
		}
		return ids
	}
	matrix := map[string]func(t *testing.T){
		"GET /v1/records": func(t *testing.T) {
			var page api.RecordPage
			b.do("GET", "/v1/records?limit=500", scopedToken, nil).decode(t, &page)
			require.Len(t, page.Records, len(o))
			for _, rec := range page.Records {
				require.Equal(t, "orders", rec.Original.Topic)
			}
		},
		"GET /v1/incidents": func(t *testing.T) {
			topics := func(token string) []string {
				var l api.IncidentList
				r := b.do("GET", "/v1/incidents", token, nil)
				require.Equal(t, http.StatusOK, r.status, "%s", r.body)
				r.decode(t, &l)
				var out []string
				for _, in := range l.Incidents {
					out = append(out, in.OriginalTopic)
				}
				return out
			}
			require.Equal(t, []string{"orders"}, topics(scopedToken))
			require.ElementsMatch(t, []string{"orders", "payments"}, topics(viewerToken))
			var l api.IncidentList
			b.do("GET", "/v1/incidents?original_topic=payments", scopedToken, nil).decode(t, &l)
			require.Empty(t, l.Incidents)
		},
		"GET /v1/records/export": func(t *testing.T) {
			topics := func(q string) []string {
				r := b.do("GET", "/v1/records/export"+q, scopedToken, nil)
				require.Equal(t, http.StatusOK, r.status, "%s", r.body)
				var out []string
				for _, line := range bytes.Split(bytes.TrimSpace(r.body), []byte("\n")) {
					if len(line) == 0 {
						continue
					}
					var d api.RecordDetail
					require.NoError(t, json.Unmarshal(line, &d))
					out = append(out, d.Record.Original.Topic)
				}
				return out
			}
			got := topics("")
			require.Len(t, got, len(o))
			require.Equal(t, []string{"orders"}, slices.Compact(got))
			require.Empty(t, topics("?original_topic=payments"))
		},
		"GET /v1/records/{id}": func(t *testing.T) {
			notFound(t, b.do("GET", path("/v1/records/%d", p[2]), scopedToken, nil))
			reached(t, b.do("GET", path("/v1/records/%d", o[2]), scopedToken, nil))
		},
		"POST /v1/records/{id}/replay": func(t *testing.T) {
			notFound(t, b.do("POST", path("/v1/records/%d/replay", p[2]), scopedToken, nil))
			reached(t, b.do("POST", path("/v1/records/%d/replay", o[2]), scopedToken, nil))
		},
		"POST /v1/records/{id}/discard": func(t *testing.T) {
			notFound(t, b.do("POST", path("/v1/records/%d/discard", p[3]), scopedToken, api.DiscardRequest{Reason: "x"}))
			reached(t, b.do("POST", path("/v1/records/%d/discard", o[3]), scopedToken, api.DiscardRequest{Reason: "x"}))
		},
		"POST /v1/records/{id}/retry-now": func(t *testing.T) {
			notFound(t, b.do("POST", path("/v1/records/%d/retry-now", p[4]), scopedToken, nil))
			reached(t, b.do("POST", path("/v1/records/%d/retry-now", o[4]), scopedToken, nil))
		},
		"POST /v1/bulk/replay": func(t *testing.T) {
			notFound(t, b.do("POST", "/v1/bulk/replay", scopedToken, api.BulkRequest{IDs: []int64{o[5], p[5]}, DryRun: true}))
			reached(t, b.do("POST", "/v1/bulk/replay", scopedToken, api.BulkRequest{IDs: []int64{o[5]}, DryRun: true}))
		},
		"POST /v1/bulk/discard": func(t *testing.T) {
			notFound(t, b.do("POST", "/v1/bulk/discard", scopedToken, api.BulkRequest{IDs: []int64{p[5]}, DryRun: true, Reason: "x"}))
			reached(t, b.do("POST", "/v1/bulk/discard", scopedToken, api.BulkRequest{IDs: []int64{o[5]}, DryRun: true, Reason: "x"}))
		},
		"GET /v1/jobs": func(t *testing.T) {
			scoped := jobIDs(b.do("GET", "/v1/jobs?limit=500", scopedToken, nil))
			require.Contains(t, scoped, ordersJob)
			require.NotContains(t, scoped, paymentsJob)
			require.NotContains(t, scoped, mixedJob)
			require.NotContains(t, scoped, anyJob.ID)
			all := jobIDs(b.do("GET", "/v1/jobs?limit=500", viewerToken, nil))
			require.Subset(t, all, []int64{ordersJob, paymentsJob, mixedJob, anyJob.ID})
		},
		"GET /v1/jobs/{id}": func(t *testing.T) {
			for _, id := range []int64{paymentsJob, mixedJob, anyJob.ID} {
				notFound(t, b.do("GET", path("/v1/jobs/%d", id), scopedToken, nil))
			}
			reached(t, b.do("GET", path("/v1/jobs/%d", ordersJob), scopedToken, nil))
		},
		"POST /v1/jobs/{id}/cancel": func(t *testing.T) {
			notFound(t, b.do("POST", path("/v1/jobs/%d/cancel", paymentsJob), scopedToken, nil))
			job, err := b.store.GetJob(ctx, paymentsJob)
			require.NoError(t, err)
			require.Equal(t, store.JobPending, job.Status, "nothing happened to it")
			reached(t, b.do("POST", path("/v1/jobs/%d/cancel", ordersJob), scopedToken, nil))
		},
		"GET /v1/stats": func(t *testing.T) {
			var st api.Stats
			b.do("GET", "/v1/stats", scopedToken, nil).decode(t, &st)
			require.NotEmpty(t, st.Counts)
			for _, c := range st.Counts {
				require.Equal(t, "orders", c.OriginalTopic)
			}
		},
		"GET /v1/stats/parked-over-time": func(t *testing.T) {
			stored := func(token string) (n int64) {
				var series api.ParkedOverTime
				b.do("GET", "/v1/stats/parked-over-time", token, nil).decode(t, &series)
				for _, pt := range series.Points {
					n += pt.Stored
				}
				return n
			}
			require.EqualValues(t, len(o), stored(scopedToken), "orders' records only")
			require.EqualValues(t, len(o)+len(p), stored(viewerToken))
		},
		"GET /v1/routes": func(t *testing.T) {
			forbidden(t, b.do("GET", "/v1/routes", scopedToken, nil))
			reached(t, b.do("GET", "/v1/routes", viewerToken, nil))
		},
		"POST /v1/routes/{route}/pause": func(t *testing.T) {
			forbidden(t, b.do("POST", "/v1/routes/orders-route/pause", scopedToken, nil))
			reached(t, b.do("POST", "/v1/routes/orders-route/pause", operatorToken, nil))
			notFound(t, b.do("POST", "/v1/routes/nosuch/pause", operatorToken, nil))
		},
		"POST /v1/routes/{route}/resume": func(t *testing.T) {
			forbidden(t, b.do("POST", "/v1/routes/orders-route/resume", scopedToken, nil))
			reached(t, b.do("POST", "/v1/routes/orders-route/resume", operatorToken, nil))
			notFound(t, b.do("POST", "/v1/routes/nosuch/resume", operatorToken, nil))
		},
		"POST /v1/routes/{route}/run": func(t *testing.T) {
			forbidden(t, b.do("POST", "/v1/routes/orders-route/run", scopedToken, nil))
			reached(t, b.do("POST", "/v1/routes/orders-route/run", operatorToken, nil))
			notFound(t, b.do("POST", "/v1/routes/nosuch/run", operatorToken, nil))
		},
		"POST /v1/routes/{route}/breaker": func(t *testing.T) {
			auto := api.BreakerRequest{Mode: api.BreakerRequestModeAuto, Reason: "x"}
			forbidden(t, b.do("POST", "/v1/routes/orders-route/breaker", scopedToken, auto))
			reached(t, b.do("POST", "/v1/routes/orders-route/breaker", operatorToken, auto))
			notFound(t, b.do("POST", "/v1/routes/nosuch/breaker", operatorToken, auto))
		},
		"GET /v1/runs": func(t *testing.T) {
			forbidden(t, b.do("GET", "/v1/runs", scopedToken, nil))
			reached(t, b.do("GET", "/v1/runs", viewerToken, nil))
		},
		"GET /v1/audit": func(t *testing.T) {
			var audit api.AuditList
			b.do("GET", "/v1/audit?limit=500", scopedToken, nil).decode(t, &audit)
			var sawOrders bool
			for _, e := range audit.Entries {
				require.NotContains(t, e.Reason, "jane@example.com")
				require.Empty(t, e.Route, "route actions concern every topic")
				for _, id := range e.RecordIDs {
					require.Contains(t, o, id, "%+v", e)
				}
				require.NotContains(t, []int64{paymentsJob, mixedJob, anyJob.ID}, e.JobID, "%+v", e)
				sawOrders = sawOrders || e.Reason == "orders cleanup"
			}
			require.True(t, sawOrders, "%+v", audit)
			// Its filters narrow the scoped view and never widen it.
			for _, q := range []string{path("record_id=%d", p[1]), "topic=payments", "actor=otto&action=discard&topic=payments"} {
				var narrowed api.AuditList
				b.do("GET", "/v1/audit?"+q, scopedToken, nil).decode(t, &narrowed)
				require.Empty(t, narrowed.Entries, q)
			}
			var history api.AuditList
			b.do("GET", path("/v1/audit?record_id=%d", o[1]), scopedToken, nil).decode(t, &history)
			require.Len(t, history.Entries, 1)
			require.Equal(t, "orders cleanup", history.Entries[0].Reason)
			var all api.AuditList
			b.do("GET", "/v1/audit?limit=500", viewerToken, nil).decode(t, &all)
			require.Greater(t, len(all.Entries), len(audit.Entries))
		},
	}
	for _, rt := range b.api.Routes() {
		key := rt.Method + " " + rt.Path
		check, ok := matrix[key]
		require.True(t, ok, "%s has no row in the scope matrix", key)
		t.Run(key, check)
	}
	require.Len(t, matrix, len(b.api.Routes()))

	// No phantom route was created by the refused names.
	var routes api.RouteList
	b.do("GET", "/v1/routes", viewerToken, nil).decode(t, &routes)
	require.Len(t, routes.Routes, 1)
	require.Equal(t, "orders-route", routes.Routes[0].Route)
}
