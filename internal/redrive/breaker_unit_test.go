package redrive

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/headers"
	"github.com/dlqops/dlq/internal/routes"
	"github.com/dlqops/dlq/internal/store"
)

type auditRows []store.AuditEntry

func (a *auditRows) Audit(_ context.Context, e store.AuditEntry) error {
	*a = append(*a, e)
	return nil
}

func newTestBreaker(t *testing.T, mutate func(*routes.Config)) (*breaker, *auditRows) {
	t.Helper()
	r := testRoute(t, mutate)
	m, err := newMetrics(prometheus.NewRegistry())
	require.NoError(t, err)
	rows := &auditRows{}
	return newBreaker(r, "w1", zerolog.Nop(), rows, m), rows
}

func at(offset int64) headers.Coordinates { return headers.Coordinates{Topic: "dlq", Offset: offset} }

// redriveAll sends n records read at offsets from..from+n and acknowledges them.
func redriveAll(b *breaker, from, n int64, again bool, now time.Time) {
	for o := from; o < from+n; o++ {
		if b.allow(at(o), "", now) {
			b.redriven(at(o), again, now)
		}
	}
}

// The breaker opens when the records that came back reach ratio of the distinct records
// redriven in the window, not before min_returned came back, and holds everything while
// open; the records sent again after they came back do not dilute the ratio.
func TestBreakerOpensWhenMostOfWhatWasRedrivenComesBack(t *testing.T) {
	t.Parallel()
	b, rows := newTestBreaker(t, nil)
	now := time.Unix(1_000_000, 0)
	b.startRun(now)
	redriveAll(b, 0, 2000, false, now)
	now = now.Add(2 * time.Second)
	b.startRun(now)
	// The early returns are sent again, as a slow downstream hands them back.
	for i := int64(0); i < 999; i++ {
		b.returned(at(i), "", now)
		require.True(t, b.allow(at(2000+i), "", now), "return %d: below the ratio", i)
		b.redriven(at(2000+i), true, now)
	}
	require.Equal(t, breakerClosed, b.state)
	b.returned(at(999), "", now)
	require.Equal(t, breakerOpen, b.state, "1000 of 2000 came back")
	require.False(t, b.allow(at(2999), "", now))
	require.Zero(t, b.probesLeft(now), "the due phase claims nothing while open")
	require.Equal(t, now.Add(routes.DefaultBreakerOpenFor), b.holdUntil("", now))
	require.Len(t, *rows, 1)
	require.Equal(t, "breaker_open", (*rows)[0].Action)
	require.Contains(t, (*rows)[0].Reason, "1000 of the 2000 records")

	small, _ := newTestBreaker(t, nil)
	small.startRun(now)
	redriveAll(small, 0, 50, false, now)
	for i := int64(0); i < 50; i++ {
		small.returned(at(i), "", now)
	}
	require.Equal(t, breakerClosed, small.state, "fewer than min_returned came back")

	off, _ := newTestBreaker(t, func(rc *routes.Config) { rc.Breaker.Disabled = true })
	redriveAll(off, 0, 200, false, now)
	for i := int64(0); i < 200; i++ {
		off.returned(at(i), "", now)
	}
	require.Equal(t, breakerClosed, off.state)
	require.True(t, off.allow(at(300), "", now))
}

// Counts older than the window no longer count.
func TestBreakerWindowForgets(t *testing.T) {
	t.Parallel()
	b, _ := newTestBreaker(t, func(rc *routes.Config) { rc.Breaker.Window = time.Minute })
	now := time.Unix(1_000_000, 0)
	redriveAll(b, 0, 200, false, now)
	for i := int64(0); i < 99; i++ {
		b.returned(at(i), "", now)
	}
	now = now.Add(2 * time.Minute)
	b.returned(at(99), "", now)
	require.Equal(t, breakerClosed, b.state, "the first 99 returns left the window")
}

// After open_for the breaker lets probes through, a few; probes that come back open it
// again; probes that do not come back by the end of a run started after they were
// acknowledged close it.
func TestBreakerProbesThenClosesOrOpensAgain(t *testing.T) {
	t.Parallel()
	b, rows := newTestBreaker(t, nil)
	now := time.Unix(1_000_000, 0)
	redriveAll(b, 0, 200, false, now)
	for i := int64(0); i < 100; i++ {
		b.returned(at(i), "", now)
	}
	require.Equal(t, breakerOpen, b.state)

	now = now.Add(routes.DefaultBreakerOpenFor)
	b.startRun(now)
	require.Equal(t, breakerHalfOpen, b.state)
	require.Equal(t, routes.DefaultBreakerProbes, b.probesLeft(now))
	for i := int64(0); i < routes.DefaultBreakerProbes; i++ {
		require.True(t, b.allow(at(1000+i), "", now), "probe %d", i)
	}
	require.False(t, b.allow(at(2000), "", now), "no more than the probes")
	for i := int64(0); i < routes.DefaultBreakerProbes; i++ {
		b.redriven(at(1000+i), true, now)
	}
	b.endDLQPhase(now)
	require.Equal(t, breakerHalfOpen, b.state, "the run that sent the probes cannot judge them")
	b.returned(at(5), "", now) // a straggler of before the open is not a probe
	for i := int64(0); i < 4; i++ {
		b.returned(at(1000+i), "", now)
	}
	require.Equal(t, breakerHalfOpen, b.state, "4 of 10 probes came back")
	b.returned(at(1004), "", now)
	require.Equal(t, breakerOpen, b.state, "5 of 10 probes came back")

	now = now.Add(routes.DefaultBreakerOpenFor)
	b.startRun(now)
	for i := int64(0); i < 3; i++ { // fewer records than probes: all of them probe
		require.True(t, b.allow(at(3000+i), "", now))
		b.redriven(at(3000+i), true, now)
	}
	now = now.Add(2 * time.Second)
	b.startRun(now)
	b.endDLQPhase(now)
	require.Equal(t, breakerClosed, b.state)
	require.True(t, b.allow(at(4000), "", now))
	var actions []string
	for _, r := range *rows {
		actions = append(actions, r.Action)
	}
	require.Equal(t, []string{"breaker_open", "breaker_open", "breaker_closed"}, actions, "half-open is not audited")
}
