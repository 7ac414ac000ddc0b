package api_test

import (
	"fmt"
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/api"
	"github.com/dlqops/dlq/internal/store"
)

// One cause is one incident whatever its messages' numbers and ids; the incident's
// fingerprint selects its records in the listing and in a bulk job, with the usual dry
// run and confirm.
func TestIncidentsListAndBulkByFingerprint(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.park("orders", 12, func(i int, r *store.NewRecord) {
		r.ErrorMessage = fmt.Sprintf("timeout after %d ms for order ord-%d", 100*i, 7000+i)
	})
	b.park("orders", 5, func(i int, r *store.NewRecord) {
		r.ErrorClass, r.ErrorMessage = "JsonParseException", fmt.Sprintf("unexpected character at line %d column %d", i, 3*i)
	})

	var l api.IncidentList
	r := b.do("GET", "/v1/incidents", viewerToken, nil)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	r.decode(t, &l)
	require.Len(t, l.Incidents, 2)
	require.Equal(t, "TimeoutException", l.Incidents[0].ErrorClass)
	require.Equal(t, "timeout after <n> ms for order <id>", l.Incidents[0].MessageTemplate)
	require.EqualValues(t, 12, l.Incidents[0].Parked)
	require.EqualValues(t, 0, l.Incidents[0].Scheduled)
	pi := l.Incidents[1]
	require.Equal(t, api.Incident{Fingerprint: pi.Fingerprint, ErrorClass: "JsonParseException",
		MessageTemplate: "unexpected character at line <n> column <n>", OriginalTopic: "orders", Route: "orders-route",
		Parked: 5, FirstSeen: pi.FirstSeen, LastSeen: pi.LastSeen, SampleRecordID: pi.SampleRecordID, Last24H: pi.Last24H}, pi)
	var stored int64
	for _, n := range pi.Last24H {
		stored += n
	}
	require.EqualValues(t, 5, stored, "its trend holds the records stored just now")
	var sample api.RecordDetail
	b.do("GET", path("/v1/records/%d", pi.SampleRecordID), viewerToken, nil).decode(t, &sample)
	require.Equal(t, "JsonParseException", sample.Record.ErrorClass)

	b.do("GET", "/v1/incidents?error_class=JsonParseException&limit=1", viewerToken, nil).decode(t, &l)
	require.Len(t, l.Incidents, 1)
	require.Equal(t, pi.Fingerprint, l.Incidents[0].Fingerprint)
	b.do("GET", "/v1/incidents?status=scheduled", viewerToken, nil).decode(t, &l)
	require.Empty(t, l.Incidents)
	r = b.do("GET", "/v1/incidents?status=discarded", viewerToken, nil)
	require.Equal(t, http.StatusBadRequest, r.status)
	hasField(t, r, "status")

	var page api.RecordPage
	b.do("GET", "/v1/records?fingerprint="+url.QueryEscape(pi.Fingerprint), viewerToken, nil).decode(t, &page)
	require.Len(t, page.Records, 5)
	for _, rec := range page.Records {
		require.Equal(t, "JsonParseException", rec.ErrorClass)
	}

	filter := &api.Filter{Fingerprint: pi.Fingerprint}
	r = b.do("POST", "/v1/bulk/discard", adminToken, api.BulkRequest{Filter: filter, DryRun: true, Reason: "bad producer build"})
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	var dry api.DryRun
	r.decode(t, &dry)
	require.EqualValues(t, 5, dry.Count)
	n := int64(5)
	r = b.do("POST", "/v1/bulk/discard", adminToken, api.BulkRequest{Filter: filter, ConfirmCount: &n, Reason: "bad producer build"})
	require.Equal(t, http.StatusAccepted, r.status, "%s", r.body)
	var job api.Job
	r.decode(t, &job)
	require.Equal(t, pi.Fingerprint, job.Filter.Fingerprint, "the job keeps the incident it acts on")
	require.EqualValues(t, 5, job.ConfirmedCount)
}
