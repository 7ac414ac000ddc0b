package api_test

import (
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/api"
	"github.com/dlqops/dlq/internal/api/apitest"
	"github.com/dlqops/dlq/internal/store/storetest"
)

// The query parameters the server reads are the spec's, each endpoint's: the server's
// refusal of an unknown parameter lists what it allows, which must be what the spec
// lists, and every parameter the spec lists is taken (its value may still be refused).
func TestSpecAndQueryParametersAgree(t *testing.T) {
	t.Parallel()
	// Two requests per endpoint and per parameter outrun a token's default burst: the rate
	// limit, tested on its own, is out of the way of what this test reads.
	b := setupWith(t, storetest.New(t), func(c *api.Config) { c.Limits.RequestsPerSecond, c.Limits.Burst = 1e9, 1e9 })
	doc := apitest.Spec(t)
	for p, item := range doc.Paths.Map() {
		op := item.Get
		if op == nil || !strings.HasPrefix(p, "/v1/") {
			continue // the POSTs read no query; /healthz and the like are internal/ops's
		}
		path := strings.NewReplacer("{id}", "1", "{route}", "r").Replace(p)
		var inSpec []string
		for _, pr := range append(item.Parameters, op.Parameters...) {
			if pr.Value.In == openapi3.ParameterInQuery {
				inSpec = append(inSpec, pr.Value.Name)
			}
		}
		t.Run(p, func(t *testing.T) {
			r := b.do("GET", path+"?not_in_the_spec=1", adminToken, nil)
			if r.status == http.StatusBadRequest {
				pb := r.problem(t)
				require.Equal(t, "not_in_the_spec", pb.Field)
				_, allowed, found := strings.Cut(pb.Detail, "allowed: ")
				require.True(t, found, pb.Detail)
				served := strings.Split(allowed, ", ")
				if allowed == "" {
					served = nil
				}
				slices.Sort(served)
				slices.Sort(inSpec)
				require.Equal(t, inSpec, served)
			} else {
				require.NotEqual(t, http.StatusTooManyRequests, r.status, "the rate limit answered, not the endpoint")
				require.Empty(t, inSpec, "an endpoint with parameters refuses one it does not know")
			}
			for _, pr := range append(item.Parameters, op.Parameters...) {
				if pr.Value.In != openapi3.ParameterInQuery {
					continue
				}
				r := b.do("GET", path+"?"+url.Values{pr.Value.Name: {example(pr.Value.Schema.Value)}}.Encode(), adminToken, nil)
				if r.status == http.StatusBadRequest {
					require.NotContains(t, r.problem(t).Detail, "unknown parameter", pr.Value.Name)
				}
			}
		})
	}
}

// example is a value of schema s.
func example(s *openapi3.Schema) string {
	switch {
	case len(s.Enum) > 0:
		return s.Enum[0].(string)
	case s.Type.Is(openapi3.TypeInteger):
		return "1"
	case s.Format == "date-time":
		return "2024-01-01T00:00:00Z"
	}
	return "x"
}
