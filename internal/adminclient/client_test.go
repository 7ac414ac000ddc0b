package adminclient_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/adminclient"
	"github.com/dlqops/dlq/internal/api"
	"github.com/dlqops/dlq/internal/store"
)

// An error answer is an *api.Problem: the API's problem details as sent, or, for an
// answer that is not one (a proxy's page), its status and the body as the detail.
func TestErrorAnswersAreProblems(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if got := r.Header.Get("Authorization"); got != "Bearer tok" {
			t.Errorf("Authorization: %q", got)
		}
		switch r.URL.Path {
		case "/v1/stats":
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(http.StatusBadGateway)
			_, _ = w.Write([]byte("<html>bad gateway</html>\n"))
		default:
			w.Header().Set("Content-Type", "application/problem+json")
			w.WriteHeader(http.StatusConflict)
			_, _ = w.Write([]byte(`{"type":"urn:dlq:problem:conflict","title":"Conflict","status":409,"detail":"held","request_id":"r1"}`))
		}
	}))
	t.Cleanup(srv.Close)
	c := adminclient.New(srv.URL+"/", "tok", nil)

	_, err := c.Stats(context.Background())
	var p *api.Problem
	require.True(t, errors.As(err, &p), "%v", err)
	require.Equal(t, api.Problem{Status: 502, Title: "502 Bad Gateway", Detail: "<html>bad gateway</html>"}, *p)

	_, err = c.CancelJob(context.Background(), 7)
	require.True(t, errors.As(err, &p), "%v", err)
	require.Equal(t, api.Problem{Type: "urn:dlq:problem:conflict", Title: "Conflict", Status: 409, Detail: "held", RequestID: "r1"}, *p)
}

// A route action or a bulk kind the API does not have is refused before any request.
func TestUnknownOperationsSendNothing(t *testing.T) {
	t.Parallel()
	hc := &http.Client{Transport: roundTrip(func(r *http.Request) (*http.Response, error) {
		t.Errorf("sent %s %s", r.Method, r.URL)
		return nil, errors.New("not sent")
	})}
	c := adminclient.New("http://127.0.0.1:1", "tok", hc)
	_, err := c.RouteAction(context.Background(), "orders", "delete")
	require.ErrorContains(t, err, `"delete"`)
	_, err = c.Bulk(context.Background(), store.JobKind("purge"), api.BulkRequest{IDs: []int64{1}}, "")
	require.ErrorContains(t, err, `"purge"`)
}

type roundTrip func(*http.Request) (*http.Response, error)

func (f roundTrip) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
