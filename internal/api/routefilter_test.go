package api_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/api"
)

// A route filter naming no registered route is refused, naming the registered ones (at
// most 20), on the listings, the export and a bulk job, as a typo in an enum is.
func TestRouteFilterNamesTheRegisteredRoutes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.park("orders", 2)
	listings := []string{"/v1/records", "/v1/incidents", "/v1/records/export"}

	for _, path := range listings {
		r := b.do("GET", path+"?route=order-route", viewerToken, nil)
		require.Equal(t, http.StatusOK, r.status, "no worker registered its routes yet: %s %s", path, r.body)
	}

	require.NoError(t, b.store.RegisterRoutes(context.Background(), []string{"orders-route", "payments-route"}, "dlq-worker/w1"))
	for _, path := range listings {
		r := b.do("GET", path+"?route=order-route", viewerToken, nil)
		require.Equal(t, http.StatusBadRequest, r.status, path)
		p := r.problem(t)
		require.Equal(t, "route", p.Field, path)
		require.Equal(t, `unknown route "order-route"; registered routes: orders-route, payments-route`, p.Detail, path)
		require.Equal(t, http.StatusOK, b.do("GET", path+"?route=orders-route", viewerToken, nil).status, path)
	}
	r := b.do("POST", "/v1/bulk/replay", adminToken, api.BulkRequest{Filter: &api.Filter{Route: "order-route"}, DryRun: true})
	require.Equal(t, http.StatusBadRequest, r.status, "%s", r.body)
	p := r.problem(t)
	require.Equal(t, "filter.route", p.Field)
	require.Contains(t, p.Detail, "registered routes: orders-route, payments-route")
	r = b.do("POST", "/v1/bulk/replay", adminToken, api.BulkRequest{Filter: &api.Filter{Route: "orders-route"}, DryRun: true})
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)

	// A token scoped to topics does not see the routes: its filter is not checked, so the
	// answer does not tell it which exist.
	r = b.do("GET", "/v1/records?route=order-route", scopedToken, nil)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	var page api.RecordPage
	r.decode(t, &page)
	require.Empty(t, page.Records)

	many := make([]string, 25)
	for i := range many {
		many[i] = fmt.Sprintf("route-%02d", i)
	}
	require.NoError(t, b.store.RegisterRoutes(context.Background(), many, "dlq-worker/w2"))
	p = b.do("GET", "/v1/records?route=nope", viewerToken, nil).problem(t)
	require.Contains(t, p.Detail, "registered routes: orders-route, payments-route, route-00,")
	require.Contains(t, p.Detail, "route-17 and 7 more", "27 routes, 20 named")
	require.NotContains(t, p.Detail, "route-18")
}
