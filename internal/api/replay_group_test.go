package api_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/api"
)

// A replay, single or bulk, says where each record goes by the group that failed it
// (redrive_to, as a route's); the job keeps it for its runner and shows it. Anything else
// is refused, and a discard takes none.
func TestReplayRedriveTo(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ids := b.park("orders", 3)
	filter := &api.Filter{OriginalTopic: "orders"}

	for _, bad := range []struct {
		path string
		body any
	}{
		{"/v1/bulk/replay", api.BulkRequest{Filter: filter, DryRun: true, RedriveTo: "everyone"}},
		{path("/v1/records/%d/replay", ids[0]), api.ReplayRequest{RedriveTo: "group"}},
		{"/v1/bulk/discard", api.BulkRequest{Filter: filter, DryRun: true, Reason: "x", RedriveTo: api.GroupTopic}},
	} {
		r := b.do("POST", bad.path, adminToken, bad.body)
		require.Equal(t, http.StatusBadRequest, r.status, "%s %+v: %s", bad.path, bad.body, r.body)
	}

	r := b.do("POST", path("/v1/records/%d/replay", ids[0]), adminToken, api.ReplayRequest{RedriveTo: api.GroupHeader})
	require.Equal(t, http.StatusAccepted, r.status, "%s", r.body)
	var single api.Job
	r.decode(t, &single)
	require.Equal(t, api.GroupHeader, single.RedriveTo)

	n := int64(2)
	r = b.do("POST", "/v1/bulk/replay", adminToken, api.BulkRequest{IDs: ids[1:], ConfirmCount: &n, RedriveTo: api.GroupTopic})
	require.Equal(t, http.StatusAccepted, r.status, "%s", r.body)
	var bulk api.Job
	r.decode(t, &bulk)
	var got api.Job
	b.do("GET", path("/v1/jobs/%d", bulk.ID), viewerToken, nil).decode(t, &got)
	require.Equal(t, api.GroupTopic, got.RedriveTo, "the job keeps its redrive_to")
}
