package api_test

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/api"
	"github.com/dlqops/dlq/internal/store"
	"github.com/dlqops/dlq/internal/store/storetest"
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
		"from=last+week": "from", "to=2026-13-01": "to", "actor=a%00b": "actor", "colour=red": "colour",
	} {
		r := b.do("GET", "/v1/audit?"+q, viewerToken, nil)
		require.Equal(t, http.StatusBadRequest, r.status, q)
		hasField(t, r, field)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// Parked over time: what entered the parking store per hour or day, by stored_at, with
// what of it is parked now; every bucket up to the current one, empty ones included.
func TestParkedOverTime(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	now := time.Date(2026, 3, 10, 14, 30, 0, 0, time.UTC)
	clock := func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		return now
	}
	set := func(t time.Time) {
		mu.Lock()
		defer mu.Unlock()
		now = t
	}
	b := setupWith(t, storetest.New(t, store.WithClock(clock)), func(c *api.Config) { c.Clock = clock })
	set(time.Date(2026, 3, 10, 11, 5, 0, 0, time.UTC))
	early := b.park("orders", 4)
	set(time.Date(2026, 3, 10, 14, 10, 0, 0, time.UTC))
	b.park("orders", 2)
	b.park("payments", 3)
	set(time.Date(2026, 3, 8, 9, 0, 0, 0, time.UTC))
	b.park("old", 5)
	set(time.Date(2026, 3, 10, 14, 30, 0, 0, time.UTC))
	for _, id := range early[:3] {
		require.Equal(t, http.StatusOK, b.do("POST", path("/v1/records/%d/discard", id), operatorToken, api.DiscardRequest{Reason: "x"}).status)
	}

	get := func(token, q string) api.ParkedOverTime {
		t.Helper()
		r := b.do("GET", "/v1/stats/parked-over-time?"+q, token, nil)
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
		var out api.ParkedOverTime
		r.decode(t, &out)
		return out
	}
	hours := get(viewerToken, "")
	require.Equal(t, "hour", hours.Bucket)
	require.Len(t, hours.Points, 24)
	require.Equal(t, time.Date(2026, 3, 9, 15, 0, 0, 0, time.UTC), hours.Points[0].Start)
	last := hours.Points[23]
	require.Equal(t, api.ParkedPoint{Start: time.Date(2026, 3, 10, 14, 0, 0, 0, time.UTC), Stored: 5, StillParked: 5}, last)
	require.Equal(t, api.ParkedPoint{Start: time.Date(2026, 3, 10, 11, 0, 0, 0, time.UTC), Stored: 4, StillParked: 1}, hours.Points[20],
		"discarded since: stored then, not parked now")
	var sum int64
	for _, p := range hours.Points {
		sum += p.Stored
	}
	require.EqualValues(t, 9, sum, "the records of two days ago are outside the last 24 hours")

	days := get(viewerToken, "bucket=day&buckets=3")
	require.Len(t, days.Points, 3)
	require.Equal(t, api.ParkedPoint{Start: time.Date(2026, 3, 8, 0, 0, 0, 0, time.UTC), Stored: 5, StillParked: 5}, days.Points[0])
	require.Equal(t, api.ParkedPoint{Start: time.Date(2026, 3, 9, 0, 0, 0, 0, time.UTC)}, days.Points[1])
	require.Equal(t, api.ParkedPoint{Start: time.Date(2026, 3, 10, 0, 0, 0, 0, time.UTC), Stored: 9, StillParked: 6}, days.Points[2])

	scoped := get(scopedToken, "buckets=1")
	require.Equal(t, []api.ParkedPoint{{Start: last.Start, Stored: 2, StillParked: 2}}, scoped.Points, "orders only")

	for q, field := range map[string]string{"bucket=week": "bucket", "buckets=0": "buckets", "buckets=169": "buckets",
		"bucket=day&buckets=367": "buckets", "buckets=x": "buckets", "from=now": "from"} {
		r := b.do("GET", "/v1/stats/parked-over-time?"+q, viewerToken, nil)
		require.Equal(t, http.StatusBadRequest, r.status, q)
		hasField(t, r, field)
	}
}
