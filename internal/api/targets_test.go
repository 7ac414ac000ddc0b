package api_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/api"
	"github.com/dlqops/dlq/internal/store"
)

// A replay a record's route forbids is refused before a job exists (422 target-refused,
// naming the reason), on the allowed_targets the job runners published: a single replay
// of a record parked target_not_allowed to its original topic, the same by an explicit
// replay topic the route does not allow, and bulk replays by filter and by ids, dry runs
// included. Each refusal names the route and is audited once (outcome target_refused). An
// explicit, allowed target is accepted; a route no runner published is left to the runner.
func TestReplayRefusesForbiddenTargetsUpFront(t *testing.T) {
	t.Parallel()
	b := setup(t)
	forbidden := b.park("audit", 3, func(_ int, r *store.NewRecord) { r.Reason = store.ReasonTargetNotAllowed })
	b.park("orders", 2)
	legacy := b.park("legacy", 1)
	require.NoError(t, b.store.PublishRouteTargets(context.Background(), map[string][]string{
		"audit-route":  {"orders.replay"},
		"orders-route": nil, // any topic
	}, "w1"))

	type audited struct{ actor, action, requestID string }
	var refusals []audited
	// refused checks a refusal of a request by actor to action.
	refused := func(r response, actor, action, reason, topic string) {
		t.Helper()
		require.Equal(t, http.StatusUnprocessableEntity, r.status, "%s", r.body)
		p := r.problem(t)
		require.Equal(t, "urn:dlq:problem:target-refused", p.Type)
		require.Equal(t, "target_topic", p.Field)
		require.Contains(t, p.Detail, "route audit-route")
		require.Contains(t, p.Detail, reason)
		require.Contains(t, p.Detail, topic+" is not in allowed_targets")
		refusals = append(refusals, audited{actor, action, r.header.Get("X-Request-Id")})
	}
	const one, bulk = "POST /v1/records/{id}/replay", "POST /v1/bulk/replay"
	refused(b.do("POST", path("/v1/records/%d/replay", forbidden[0]), operatorToken, nil), "otto", one, "target_not_allowed", "audit")
	refused(b.do("POST", path("/v1/records/%d/replay", forbidden[0]), operatorToken, api.ReplayRequest{TargetTopic: "payments.replay"}),
		"otto", one, "target_not_allowed", "payments.replay")
	all := &api.Filter{Reasons: []store.Reason{store.ReasonTargetNotAllowed}}
	refused(b.do("POST", "/v1/bulk/replay", adminToken, api.BulkRequest{Filter: all, DryRun: true}), "ada", bulk, "target_not_allowed", "audit")
	three := int64(3)
	refused(b.do("POST", "/v1/bulk/replay", adminToken, api.BulkRequest{Filter: all, ConfirmCount: &three}), "ada", bulk, "target_not_allowed", "audit")
	refused(b.do("POST", "/v1/bulk/replay", adminToken, api.BulkRequest{IDs: forbidden, TargetTopic: "payments.replay", DryRun: true}),
		"ada", bulk, "target_not_allowed", "payments.replay")
	// A selection mixing an open route with a forbidding one is refused as a whole.
	refused(b.do("POST", "/v1/bulk/replay", adminToken, api.BulkRequest{Filter: &api.Filter{}, DryRun: true}), "ada", bulk, "target_not_allowed", "audit")
	var jobs api.JobList
	b.do("GET", "/v1/jobs", viewerToken, nil).decode(t, &jobs)
	require.Empty(t, jobs.Jobs, "nothing refused became a job")
	rows := auditRows(t, b.store)
	require.Len(t, rows, len(refusals), "one audit row per refusal: %+v", rows)
	for i, want := range refusals {
		require.Equal(t, audited{want.actor, want.action, want.requestID}, audited{rows[i].Actor, rows[i].Action, rows[i].RequestID})
		require.Equal(t, "target_refused", rows[i].Outcome)
		require.Contains(t, rows[i].Reason, "route audit-route")
	}

	r := b.do("POST", path("/v1/records/%d/replay", forbidden[0]), operatorToken, api.ReplayRequest{TargetTopic: "orders.replay"})
	require.Equal(t, http.StatusAccepted, r.status, "%s", r.body)
	r = b.do("POST", "/v1/bulk/replay", adminToken, api.BulkRequest{IDs: forbidden[1:], TargetTopic: "orders.replay", DryRun: true})
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	r = b.do("POST", "/v1/bulk/replay", adminToken, api.BulkRequest{Filter: &api.Filter{OriginalTopic: "orders"}, DryRun: true})
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	r = b.do("POST", path("/v1/records/%d/replay", legacy[0]), operatorToken, nil)
	require.Equal(t, http.StatusAccepted, r.status, "%s", r.body)
}
