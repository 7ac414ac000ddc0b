package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/api"
	"github.com/dlqops/dlq/internal/store"
)

// The bar tells no more than it knows: empty while the job counts its records, a rate from
// the last seconds that follows a change of speed, a time left that is never 0s while
// records are left, and a fill that moves by an eighth of a cell.
func TestProgressIsHonest(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	p := &progress{tty: true, now: func() time.Time { return t0 }}

	p.observe(t0, 0)
	counting := p.line(api.Job{ID: 1, Status: store.JobPending})
	require.Contains(t, counting, "░░░░░░░░░░░░░░░░░░░░░░░░░░░░░░ counting 0/0", "no full bar before the total is known")
	require.Contains(t, counting, "-/s ETA -")

	// 66 records a second, 49 left: the last second is still to go.
	p.observe(t0.Add(time.Second), 66)
	line := p.line(api.Job{ID: 1, Status: store.JobRunning, Total: 115, Done: 66})
	require.Contains(t, line, "66/s ETA 1s")

	// Fast for ten seconds, then slow: the rate is the last window's, not the average.
	p = &progress{tty: true}
	for i := range 11 {
		p.observe(t0.Add(time.Duration(i)*time.Second), int64(i)*1000)
	}
	for i := 11; i <= 21; i++ {
		p.observe(t0.Add(time.Duration(i)*time.Second), 10_000+int64(i-10)*50)
	}
	line = p.line(api.Job{ID: 1, Status: store.JobRunning, Total: 20_000, Done: 10_550})
	require.Contains(t, line, " 50/s ETA 3m9s", "9,450 left at 50/s")

	// 1/240 of the job is one eighth of one of the thirty cells.
	require.Equal(t, "▏"+repeat("░", 29), bar(1, 240))
	require.Equal(t, "█▌"+repeat("░", 28), bar(12, 240))
	require.Equal(t, repeat("█", 30), bar(240, 240))
	require.Equal(t, repeat("░", 30), bar(0, 0))
}

func repeat(s string, n int) string {
	out := ""
	for range n {
		out += s
	}
	return out
}
