package api_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/api"
	"github.com/dlqops/dlq/internal/store"
)

// Listings carry the total their filters select over all pages, within the token's topics:
// records, jobs and audit entries.
func TestListingsCarryTotals(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.park("orders", 3)
	b.park("payments", 2, func(_ int, r *store.NewRecord) { r.Reason = store.ReasonUnroutable })

	records := func(token, q string) api.RecordPage {
		t.Helper()
		r := b.do("GET", "/v1/records?"+q, token, nil)
		require.Equal(t, http.StatusOK, r.status, string(r.body))
		var page api.RecordPage
		r.decode(t, &page)
		require.False(t, page.TotalIsEstimate)
		return page
	}
	require.EqualValues(t, 5, records(viewerToken, "").Total)
	page := records(viewerToken, "limit=1")
	require.Len(t, page.Records, 1)
	require.EqualValues(t, 5, page.Total, "the total counts every page")
	require.EqualValues(t, 5, records(viewerToken, "limit=1&cursor="+page.NextCursor).Total)
	require.EqualValues(t, 2, records(viewerToken, "reason=unroutable").Total)
	require.EqualValues(t, 3, records(scopedToken, "").Total, "a scoped token counts its topics only")
	require.EqualValues(t, 0, records(scopedToken, "original_topic=payments").Total)

	for topic, n := range map[string]int64{"orders": 3, "payments": 2} {
		r := b.do("POST", "/v1/bulk/discard", adminToken, api.BulkRequest{Filter: &api.Filter{OriginalTopic: topic},
			Reason: "totals", ConfirmCount: &n})
		require.Equal(t, http.StatusAccepted, r.status, string(r.body))
	}
	jobs := func(token string) api.JobList {
		r := b.do("GET", "/v1/jobs?limit=1", token, nil)
		require.Equal(t, http.StatusOK, r.status, string(r.body))
		var list api.JobList
		r.decode(t, &list)
		return list
	}
	require.EqualValues(t, 2, jobs(adminToken).Total)
	require.Len(t, jobs(adminToken).Jobs, 1)
	require.EqualValues(t, 1, jobs(scopedToken).Total, "the orders job only")

	audit := func(token, q string) api.AuditList {
		r := b.do("GET", "/v1/audit?"+q, token, nil)
		require.Equal(t, http.StatusOK, r.status, string(r.body))
		var list api.AuditList
		r.decode(t, &list)
		return list
	}
	all := audit(adminToken, "limit=1")
	require.GreaterOrEqual(t, all.Total, int64(2))
	require.Len(t, all.Entries, 1)
	require.EqualValues(t, 2, audit(adminToken, "action="+all.Entries[0].Action).Total)
	require.EqualValues(t, 1, audit(scopedToken, "action="+all.Entries[0].Action).Total)
}
