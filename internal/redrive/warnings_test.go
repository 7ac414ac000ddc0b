package redrive

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/headers"
	"github.com/dlqops/dlq/internal/testenv/metrictest"
)

// Every header warning is counted; a route logs at most one line about them per 10 s,
// and the next line says how many warned records it did not log.
func TestHeaderWarningsLogOneLinePerInterval(t *testing.T) {
	var logs strings.Builder
	count := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "w"}, []string{"route", "kind"})
	reg := prometheus.NewRegistry()
	reg.MustRegister(count)
	hw := &headerWarnings{log: zerolog.New(&logs), route: "r", count: count}
	dup := []headers.Warning{{Kind: headers.WarnDuplicateKey, Detail: "k: duplicate key, the last occurrence wins"}}
	for off := range int64(3) {
		hw.note(headers.Coordinates{Topic: "t.dlq", Partition: 1, Offset: off}, dup)
	}
	require.Equal(t, 3.0, metrictest.Sum(t, reg, "w", map[string]string{"route": "r", "kind": "duplicate_key"}))
	require.Equal(t, 1, strings.Count(logs.String(), "\n"), "one line within the interval: %s", logs.String())

	hw.last = hw.last.Add(-headerWarnInterval) // the interval has passed
	hw.note(headers.Coordinates{Topic: "t.dlq", Partition: 1, Offset: 3}, dup)
	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	require.Len(t, lines, 2)
	var second map[string]any
	require.NoError(t, json.Unmarshal([]byte(lines[1]), &second))
	require.Equal(t, "warn", second["level"])
	require.Equal(t, 3.0, second["offset"])
	require.Equal(t, 2.0, second["records_not_logged"], "the two records after the first line")
	require.Equal(t, 10*time.Second, headerWarnInterval)
}
