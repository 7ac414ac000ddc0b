package redrive

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/routes"
	"github.com/dlqops/dlq/internal/testenv/metrictest"
)

// sendFirst redrives the first-time records read at offsets from..from+n, of cause, as
// the loop does: a sample of them has its cause counted.
func sendFirst(b *breaker, from, n int64, cause string, now time.Time) {
	for o := from; o < from+n; o++ {
		sample := b.sampleCause()
		if !b.allow(at(o), cause, now) {
			continue
		}
		if sample {
			b.sent(cause, now)
		}
		b.redriven(at(o), false, now)
	}
}

// When most of what comes back shares one cause while the route sends others too, that
// cause's breaker opens instead of the route's: its records are held, the others flow.
// After open_for it probes; probes that do not come back close it. Each open and close
// is audited by fingerprint.
func TestCauseBreakerHoldsOneCauseApart(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	m, err := newMetrics(reg)
	require.NoError(t, err)
	rows := &auditRows{}
	b := newBreaker(testRoute(t, nil), "w1", zerolog.Nop(), rows, m)
	state := func() []metrictest.Sample {
		return metrictest.Samples(t, reg, "dlq_worker_cause_breaker_state", map[string]string{"route": b.route})
	}
	now := time.Unix(1_000_000, 0)
	b.startRun(now)
	sendFirst(b, 0, 200, "poison", now)
	sendFirst(b, 200, 200, "fine", now)
	for i := int64(0); i < 200; i++ {
		b.returned(at(i), "poison", now)
	}
	require.Equal(t, breakerClosed, b.state, "the route keeps redriving")
	require.True(t, b.holdsCauses())
	require.False(t, b.allow(at(1000), "poison", now), "the returning cause is held")
	require.Equal(t, now.Add(routes.DefaultBreakerOpenFor), b.holdUntil("poison", now))
	require.True(t, b.allow(at(1001), "fine", now), "the other causes flow")
	require.True(t, b.allow(at(1002), "", now))
	require.Len(t, b.causes.byCause, 1)
	require.Equal(t, []metrictest.Sample{{Labels: map[string]string{"route": b.route, "fingerprint": "poison"}, Value: 1}}, state())

	now = now.Add(routes.DefaultBreakerOpenFor)
	b.startRun(now)
	for i := int64(0); i < routes.DefaultBreakerProbes; i++ {
		require.True(t, b.allow(at(2000+i), "poison", now), "probe %d", i)
		b.redriven(at(2000+i), true, now)
	}
	require.False(t, b.allow(at(3000), "poison", now), "no more than the probes")
	now = now.Add(2 * time.Second)
	b.startRun(now)
	b.endDLQPhase(now)
	require.False(t, b.holdsCauses(), "its probes did not come back: closed")
	require.True(t, b.allow(at(3001), "poison", now))
	require.Empty(t, state(), "a closed cause's series is gone")
	var actions []string
	for _, r := range *rows {
		actions = append(actions, r.Action)
		require.Contains(t, r.Reason, "fingerprint poison")
	}
	require.Equal(t, []string{"cause_breaker_open", "cause_breaker_closed"}, actions)
}

// A route that sends almost only the returning cause has an outage, not a poison cause:
// its own breaker opens. Past maxCauseBreakers held causes, the route's breaker opens too.
func TestCauseBreakerLeavesAnOutageToTheRoute(t *testing.T) {
	t.Parallel()
	b, _ := newTestBreaker(t, nil)
	now := time.Unix(1_000_000, 0)
	sendFirst(b, 0, 400, "outage", now)
	for i := int64(0); i < 200; i++ {
		b.returned(at(i), "outage", now)
	}
	require.Equal(t, breakerOpen, b.state)
	require.False(t, b.holdsCauses())

	full, _ := newTestBreaker(t, nil)
	for i := 0; i < maxCauseBreakers; i++ {
		full.causes.byCause[string(rune('a'+i))] = &causeBreaker{cause: string(rune('a' + i)), state: breakerOpen, until: now.Add(time.Hour)}
	}
	sendFirst(full, 0, 200, "poison", now)
	sendFirst(full, 200, 200, "fine", now)
	for i := int64(0); i < 200; i++ {
		full.returned(at(i), "poison", now)
	}
	require.Equal(t, breakerOpen, full.state, "no room for another cause: the route's breaker opens")
	require.Len(t, full.causes.byCause, maxCauseBreakers)
}
