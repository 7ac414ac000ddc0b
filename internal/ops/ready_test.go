package ops_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/ops"
)

// dlq_ready follows the readiness checks at each scrape, as /readyz does.
func TestReadyGauge(t *testing.T) {
	s := start(t, ops.Listen{})
	var down atomic.Bool
	s.AddCheck("dependency", func(context.Context) error {
		if down.Load() {
			return errors.New("unreachable")
		}
		return nil
	})
	scrape := func() (string, int) {
		resp, err := http.Get("http://" + s.Addr() + "/metrics")
		require.NoError(t, err)
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		ready, err := http.Get("http://" + s.Addr() + "/readyz")
		require.NoError(t, err)
		ready.Body.Close()
		return string(body), ready.StatusCode
	}
	body, code := scrape()
	require.Contains(t, body, "\ndlq_ready 1\n")
	require.Equal(t, http.StatusOK, code)
	down.Store(true)
	body, code = scrape()
	require.Contains(t, body, "\ndlq_ready 0\n")
	require.Equal(t, http.StatusServiceUnavailable, code)
}
