package main

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/api"
	"github.com/dlqops/dlq/internal/store"
)

// A cancelled job's progress line says how many records were still in the producer at the
// cancel, on a terminal and off it; a job without that figure says nothing of it.
func TestProgressLineSaysWhatWasInFlightAtCancel(t *testing.T) {
	inFlight := int64(1500)
	cancelled := api.Job{ID: 7, Status: store.JobCancelled, Total: 10000, Done: 3500, InFlightAtCancel: &inFlight}
	for _, tty := range []bool{false, true} {
		p := &progress{tty: tty}
		require.Contains(t, p.line(cancelled), "1500 in flight at the cancel")
		require.NotContains(t, p.line(api.Job{ID: 8, Status: store.JobSucceeded, Total: 10, Done: 10}), "in flight")
	}
}
