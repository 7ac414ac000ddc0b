package api_test

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/api"
	"github.com/dlqops/dlq/internal/store"
)

// The incident listing carries how many incidents its filter selects beyond the page it
// shows, within the token's topics, as the record listing does.
func TestIncidentsCarryTheirTotal(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for i := range 3 {
		b.park("orders", 2, func(_ int, r *store.NewRecord) {
			r.ErrorClass, r.ErrorMessage = fmt.Sprintf("Cause%dException", i), "failed"
		})
	}
	b.park("payments", 4, func(_ int, r *store.NewRecord) { r.ErrorClass = "PaymentsException" })

	list := func(path, token string) api.IncidentList {
		t.Helper()
		r := b.do("GET", path, token, nil)
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
		var l api.IncidentList
		r.decode(t, &l)
		return l
	}
	l := list("/v1/incidents?limit=2", viewerToken)
	require.Len(t, l.Incidents, 2)
	require.EqualValues(t, 4, l.Total, "every incident, not the page")
	require.False(t, l.TotalIsEstimate)
	require.EqualValues(t, 3, list("/v1/incidents?limit=1", scopedToken).Total, "only the token's topics")
	require.EqualValues(t, 1, list("/v1/incidents?original_topic=payments", viewerToken).Total)
	require.EqualValues(t, 0, list("/v1/incidents?status=scheduled", viewerToken).Total)
}
