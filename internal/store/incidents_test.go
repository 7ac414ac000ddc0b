package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/fingerprint"
	"github.com/dlqops/dlq/internal/store"
	"github.com/dlqops/dlq/internal/store/storetest"
)

// Records that differ only in their messages' variable parts are one incident, counted by
// status, the largest first; another class, topic or route is another incident; a
// fingerprint filter selects exactly one incident's records.
func TestIncidentsGroupRecordsByCause(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, clock := storetest.NewClocked(t)

	timeouts := parked("dlq.inc", 0, 5)
	for i := range timeouts {
		timeouts[i].ErrorMessage = fmt.Sprintf("timeout after %d ms calling /orders/%d", 100+i, 9000+i)
	}
	first := clock.Now()
	_, err := s.StoreBatch(ctx, timeouts, nil)
	require.NoError(t, err)
	clock.Advance(time.Minute)
	waiting := scheduled("dlq.inc", 5, 2, clock.Now().Add(time.Hour))
	for i := range waiting {
		waiting[i].ErrorMessage = fmt.Sprintf("timeout after %d ms calling /orders/%d", 7*i, i)
	}
	parse := parked("dlq.inc", 7, 3)
	for i := range parse {
		parse[i].ErrorClass, parse[i].ErrorMessage = "JsonParseException", fmt.Sprintf("unexpected '%c' at position %d", 'a'+i, i)
	}
	otherTopic := parked("dlq.inc", 10, 1)
	otherTopic[0].Origin.Topic, otherTopic[0].ErrorMessage = "payments", "timeout after 1 ms calling /orders/1"
	last := clock.Now()
	_, err = s.StoreBatch(ctx, append(append(waiting, parse...), otherTopic...), nil)
	require.NoError(t, err)

	incs, err := s.Incidents(ctx, store.Filter{}, 50)
	require.NoError(t, err)
	require.Len(t, incs, 3)
	tmpl := "timeout after <n> ms calling /orders/<id>"
	want := store.Incident{Fingerprint: fingerprint.Of("java.net.SocketTimeoutException", tmpl, "orders"),
		ErrorClass: "java.net.SocketTimeoutException", MessageTemplate: tmpl, OriginalTopic: "orders", Route: "orders",
		Parked: 5, Scheduled: 2}
	got := incs[0]
	require.Equal(t, first, got.FirstSeen.UTC())
	require.Equal(t, last, got.LastSeen.UTC())
	require.NotZero(t, got.SampleID)
	var stored int64
	for _, n := range got.Trend {
		stored += n
	}
	require.EqualValues(t, 7, stored, "every record was stored within the last 24 hours")
	got.FirstSeen, got.LastSeen, got.SampleID, got.Trend = time.Time{}, time.Time{}, 0, [store.TrendHours]int64{}
	require.Equal(t, want, got)
	require.Equal(t, "JsonParseException", incs[1].ErrorClass)
	require.Equal(t, "unexpected <str> at position <n>", incs[1].MessageTemplate)
	require.EqualValues(t, 3, incs[1].Parked)
	require.Equal(t, "payments", incs[2].OriginalTopic)
	require.NotEqual(t, incs[0].Fingerprint, incs[2].Fingerprint)

	sample, err := s.Get(ctx, incs[1].SampleID)
	require.NoError(t, err)
	require.Equal(t, "JsonParseException", sample.ErrorClass)

	n, err := s.Count(ctx, store.Filter{Fingerprint: want.Fingerprint, Statuses: []store.Status{store.StatusParked}})
	require.NoError(t, err)
	require.EqualValues(t, 5, n)

	// Scoped like records: a token's topics see only their incidents.
	scoped, err := s.Incidents(ctx, store.Filter{OriginalTopics: []string{"payments"}}, 50)
	require.NoError(t, err)
	require.Len(t, scoped, 1)
	require.Equal(t, incs[2].Fingerprint, scoped[0].Fingerprint)

	parkedOnly, err := s.Incidents(ctx, store.Filter{Statuses: []store.Status{store.StatusScheduled}}, 50)
	require.NoError(t, err)
	require.Len(t, parkedOnly, 1)
	require.EqualValues(t, 2, parkedOnly[0].Scheduled)
}

// A claimed record parked by the worker (its topic is gone, ...) carries that cause now:
// its fingerprint is recomputed in SQL and equals what Go computes for the same failure.
func TestParkClaimedRefingerprints(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, clock := storetest.NewClocked(t)
	_, err := s.StoreBatch(ctx, scheduled("dlq.pc", 0, 2, clock.Now()), nil)
	require.NoError(t, err)
	c, err := s.ClaimDue(ctx, "", "worker", 10, time.Minute)
	require.NoError(t, err)
	require.Len(t, c.Records, 2)
	msg := "redrive of a due scheduled record: topic 'orders-v2' deleted 3 times"
	n, err := s.ParkClaimed(ctx, c.Token, []int64{c.Records[0].ID, c.Records[1].ID}, store.ReasonUnknownTopic, msg)
	require.NoError(t, err)
	require.Equal(t, 2, n)

	incs, err := s.Incidents(ctx, store.Filter{}, 50)
	require.NoError(t, err)
	require.Len(t, incs, 1)
	tmpl := fingerprint.Template(msg)
	require.Equal(t, "redrive of a due scheduled record: topic <str> deleted <n> times", tmpl)
	require.Equal(t, tmpl, incs[0].MessageTemplate)
	require.Equal(t, fingerprint.Of("java.net.SocketTimeoutException", tmpl, "orders"), incs[0].Fingerprint)
	require.EqualValues(t, 2, incs[0].Parked)
}

// An incident's trend counts its records stored in each of the last 24 hours, the current
// hour last; older records count in the incident but not in its trend.
func TestIncidentTrendCountsTheLast24Hours(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, clock := storetest.NewClocked(t)
	store1 := func(from int64, n int) {
		t.Helper()
		_, err := s.StoreBatch(ctx, parked("dlq.trend", from, n), nil)
		require.NoError(t, err)
	}
	store1(0, 1)
	clock.Advance(25 * time.Hour)
	store1(1, 2)
	clock.Advance(2 * time.Hour)
	store1(3, 3)

	incs, err := s.Incidents(ctx, store.Filter{}, 50)
	require.NoError(t, err)
	require.Len(t, incs, 1)
	require.EqualValues(t, 6, incs[0].Parked)
	var want [store.TrendHours]int64
	want[21], want[23] = 2, 3
	require.Equal(t, want, incs[0].Trend)
}
