package api_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/api"
	"github.com/dlqops/dlq/internal/store"
)

// A filter value that names no status or reason is a 400 on the field, naming the values
// that exist, on every listing and on a bulk request's filter, never an empty result.
func TestFilterTyposNameTheAllowedValues(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.park("orders", 3)
	refused := func(r response, field, allowed string) {
		t.Helper()
		require.Equal(t, http.StatusBadRequest, r.status, string(r.body))
		p := r.problem(t)
		require.Equal(t, field, p.Field)
		require.Contains(t, p.Detail, "allowed: ")
		require.Contains(t, p.Detail, allowed)
	}
	for _, listing := range []string{"/v1/records", "/v1/incidents", "/v1/records/export"} {
		refused(b.do("GET", listing+"?reason=exhaust", viewerToken, nil), "reason", "exhausted")
		refused(b.do("GET", listing+"?status=parkd", viewerToken, nil), "status", "parked")
	}
	refused(b.do("POST", "/v1/bulk/replay", adminToken, api.BulkRequest{DryRun: true,
		Filter: &api.Filter{Reasons: []store.Reason{"exhaust"}}}), "filter.reasons", "exhausted")
	refused(b.do("POST", "/v1/bulk/discard", adminToken, api.BulkRequest{DryRun: true, Reason: "typo",
		Filter: &api.Filter{Statuses: []api.Status{"parkd"}}}), "filter.statuses", "parked")

	r := b.do("GET", "/v1/records?reason=exhausted", viewerToken, nil)
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	var page api.RecordPage
	r.decode(t, &page)
	require.Len(t, page.Records, 3, "the spelled-out value still selects")
}

// Stored-time filters take relative times as well as RFC 3339: records stored a moment
// ago are within -2h and since yesterday, none are stored before -1h; a time that is
// neither is a 400 on its field.
func TestRelativeStoredTimes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.park("orders", 2)
	count := func(q string) int {
		t.Helper()
		r := b.do("GET", "/v1/records?"+q, viewerToken, nil)
		require.Equal(t, http.StatusOK, r.status, string(r.body))
		var page api.RecordPage
		r.decode(t, &page)
		return len(page.Records)
	}
	require.Equal(t, 2, count("stored_from=-2h"))
	require.Equal(t, 2, count("stored_from=yesterday"))
	require.Equal(t, 0, count("stored_to=-1h"))
	require.Equal(t, 2, count("stored_from=-30m&stored_to=now"))
	r := b.do("GET", "/v1/records?stored_from=last+week", viewerToken, nil)
	require.Equal(t, http.StatusBadRequest, r.status, string(r.body))
	hasField(t, r, "stored_from")
}
