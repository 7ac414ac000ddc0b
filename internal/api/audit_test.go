package api_test

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/api"
)

// The audit log's filters (#13): a record's history, action, actor, route, topic, job
// and time range, each narrowing what the token may see anyway.
func TestAuditFilters(t *testing.T) {
	t.Parallel()
	b := setup(t)
	require.NoError(t, b.store.RegisterRoutes(context.Background(), []string{"orders-route"}, "test"))
	o := b.park("orders", 3)
	p := b.park("payments", 2)
	start := time.Now().Add(-time.Minute).UTC()
	for _, id := range []int64{o[0], p[0]} {
		r := b.do("POST", path("/v1/records/%d/discard", id), operatorToken, api.DiscardRequest{Reason: "filters"})
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	}
	r := b.do("POST", path("/v1/records/%d/replay", o[1]), adminToken, nil)
	require.Equal(t, http.StatusAccepted, r.status, "%s", r.body)
	var job api.Job
	r.decode(t, &job)
	require.Equal(t, http.StatusOK, b.do("POST", "/v1/routes/orders-route/pause", operatorToken, nil).status)
	end := time.Now().Add(time.Minute).UTC()

	audit := func(token string, q url.Values) []api.AuditEntry {
		t.Helper()
		r := b.do("GET", "/v1/audit?"+q.Encode(), token, nil)
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
		var l api.AuditList
		r.decode(t, &l)
		return l.Entries
	}
	actions := func(es []api.AuditEntry) []string {
		out := []string{}
		for _, e := range es {
			out = append(out, e.Actor+":"+e.Action)
		}
		return out
	}
	require.Equal(t, []string{"otto:discard"}, actions(audit(viewerToken, url.Values{"record_id": {itoa(o[0])}})),
		"a record's history")
	require.Equal(t, []string{"ada:create_replay_job"}, actions(audit(viewerToken, url.Values{"record_id": {itoa(o[1])}})))
	require.Equal(t, []string{"otto:discard", "otto:discard"}, actions(audit(viewerToken, url.Values{"action": {"discard"}})))
	require.Equal(t, []string{"otto:pause_route", "otto:discard", "otto:discard"}, actions(audit(viewerToken, url.Values{"actor": {"otto"}})))
	require.Equal(t, []string{"ada:create_replay_job"}, actions(audit(viewerToken, url.Values{"job_id": {itoa(job.ID)}})))
	require.Equal(t, []string{"otto:pause_route"}, actions(audit(viewerToken, url.Values{"route": {"orders-route"}})))
	require.Equal(t, []string{"otto:discard"}, actions(audit(viewerToken, url.Values{"topic": {"payments"}})))
	require.Len(t, audit(viewerToken, url.Values{"from": {start.Format(time.RFC3339)}, "to": {end.Format(time.RFC3339)}}), 4)
	require.Empty(t, audit(viewerToken, url.Values{"from": {end.Format(time.RFC3339)}}))
	require.Empty(t, audit(viewerToken, url.Values{"to": {start.Format(time.RFC3339)}}))
	require.Equal(t, []string{"otto:discard"}, actions(audit(viewerToken, url.Values{"action": {"discard"}, "topic": {"orders"}})),
		"filters combine")

	// A filter never widens a scoped token's view.
	require.Empty(t, audit(scopedToken, url.Values{"record_id": {itoa(p[0])}}))
	require.Empty(t, audit(scopedToken, url.Values{"topic": {"payments"}}))
	require.Empty(t, audit(scopedToken, url.Values{"route": {"orders-route"}}))
	require.Equal(t, []string{"otto:discard"}, actions(audit(scopedToken, url.Values{"record_id": {itoa(o[0])}})))

	for q, field := range map[string]string{
		"record_id=abc": "record_id", "record_id=0": "record_id", "job_id=-1": "job_id",
		"from=yesterday": "from", "to=2026-13-01": "to", "actor=a%00b": "actor", "colour=red": "colour",
	} {
		r := b.do("GET", "/v1/audit?"+q, viewerToken, nil)
		require.Equal(t, http.StatusBadRequest, r.status, q)
		hasField(t, r, field)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
