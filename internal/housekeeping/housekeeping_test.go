package housekeeping_test

import (
	"context"
	"maps"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/dlqops/dlq/internal/housekeeping"
	"github.com/dlqops/dlq/internal/store"
	"github.com/dlqops/dlq/internal/store/storetest"
	"github.com/dlqops/dlq/internal/testenv/metrictest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func records(route string, status store.Status, reason store.Reason, from int64, n int) []store.NewRecord {
	recs := make([]store.NewRecord, n)
	for i := range recs {
		recs[i] = store.NewRecord{
			DLQ: store.Coordinates{Topic: "dlq." + route, Offset: from + int64(i)}, Origin: store.Origin{Topic: route, Partition: -1, Offset: -1},
			Timestamp: time.Unix(1e9, 0), Reason: reason, Status: status, Route: route, Headers: []store.Header{},
		}
		if status == store.StatusScheduled {
			recs[i].DueAt = time.Now().Add(time.Hour)
		}
	}
	return recs
}

// value is the value of the series of name with exactly labels, and whether it exists.
func value(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) (float64, bool) {
	t.Helper()
	for _, s := range metrictest.Samples(t, reg, name, labels) {
		if maps.Equal(s.Labels, labels) {
			return s.Value, true
		}
	}
	return 0, false
}

// A pass exports the parked and scheduled backlog per route and reason, drops the series
// of a drained backlog, and purges what is past its retention age, counting it.
func TestPassCountsBacklogAndPurges(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, c := storetest.NewClocked(t)
	recs := append(records("orders", store.StatusParked, store.ReasonExhausted, 0, 3), records("orders", store.StatusScheduled, store.ReasonBackoff, 3, 2)...)
	recs = append(recs, records("payments", store.StatusParked, store.ReasonUnroutable, 0, 1)...)
	_, err := st.StoreBatch(ctx, recs, nil)
	require.NoError(t, err)
	reg := prometheus.NewRegistry()
	h, err := housekeeping.New(housekeeping.Options{Log: zerolog.New(zerolog.NewTestWriter(t)), Store: st, Registry: reg,
		Retention: store.Retention{Records: 24 * time.Hour}})
	require.NoError(t, err)

	require.True(t, h.Pass(ctx), "alone, it leads")

	for _, tc := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"dlq_worker_parked_records", map[string]string{"route": "orders", "reason": "exhausted"}, 3},
		{"dlq_worker_parked_records", map[string]string{"route": "payments", "reason": "unroutable"}, 1},
		{"dlq_worker_scheduled_records", map[string]string{"route": "orders", "reason": "backoff"}, 2},
	} {
		v, ok := value(t, reg, tc.name, tc.labels)
		require.True(t, ok, "%s%v", tc.name, tc.labels)
		require.Equal(t, tc.want, v, "%s%v", tc.name, tc.labels)
	}

	page, err := st.List(ctx, store.Filter{Statuses: []store.Status{store.StatusParked}}, "", 10)
	require.NoError(t, err)
	for _, r := range page.Records {
		if r.Route == "payments" {
			_, err = st.Discard(ctx, r.ID, store.Actor{Name: "alice"})
			require.NoError(t, err)
		}
	}
	c.Advance(25 * time.Hour)
	require.True(t, h.Pass(ctx))

	_, ok := value(t, reg, "dlq_worker_parked_records", map[string]string{"route": "payments", "reason": "unroutable"})
	require.False(t, ok, "a drained backlog has no series, not a stale one")
	v, _ := value(t, reg, "dlq_worker_parked_records", map[string]string{"route": "orders", "reason": "exhausted"})
	require.Equal(t, 3.0, v)
	v, ok = value(t, reg, "dlq_worker_purged_rows_total", map[string]string{"table": store.TableDeadLetters})
	require.True(t, ok)
	require.Equal(t, 1.0, v, "the discarded row, a day later")
}

// Ledger retention is part of the pass: old gaps and positions nobody holds are purged
// and counted per table.
func TestPassPurgesTheLedger(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, c := storetest.NewClocked(t)
	require.NoError(t, st.RecordGap(ctx, store.Gap{Group: "g", Route: "orders", Topic: "dlq", From: 0, To: 3, Cause: store.GapJump, Lost: true}))
	require.NoError(t, st.AdvanceLedgerPositions(ctx, "g", []store.Coordinates{{Topic: "dlq", Offset: 3}}))
	reg := prometheus.NewRegistry()
	h, err := housekeeping.New(housekeeping.Options{Log: zerolog.New(zerolog.NewTestWriter(t)), Store: st, Registry: reg,
		Retention: store.Retention{Ledger: 48 * time.Hour}})
	require.NoError(t, err)
	c.Advance(49 * time.Hour)

	require.True(t, h.Pass(ctx))

	for _, table := range []string{store.TableGaps, store.TablePositions} {
		v, ok := value(t, reg, "dlq_worker_purged_rows_total", map[string]string{"table": table})
		require.True(t, ok, table)
		require.Equal(t, 1.0, v, table)
	}
	gaps, err := st.LedgerGaps(ctx, "g", "dlq")
	require.NoError(t, err)
	require.Empty(t, gaps)
}

// Start runs a pass at once and on every interval; Stop ends the loop and waits for it,
// and is safe before Start and twice.
func TestStartStop(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := storetest.New(t)
	_, err := st.StoreBatch(ctx, records("orders", store.StatusParked, store.ReasonExhausted, 0, 1), nil)
	require.NoError(t, err)
	reg := prometheus.NewRegistry()
	h, err := housekeeping.New(housekeeping.Options{Log: zerolog.New(zerolog.NewTestWriter(t)), Store: st, Registry: reg,
		Interval: 50 * time.Millisecond})
	require.NoError(t, err)
	require.NoError(t, h.Stop(ctx), "before Start")

	require.NoError(t, h.Start(ctx))
	require.Error(t, h.Start(ctx), "started twice")
	require.Eventually(t, func() bool {
		_, ok := value(t, reg, "dlq_worker_parked_records", map[string]string{"route": "orders", "reason": "exhausted"})
		return ok
	}, 10*time.Second, 20*time.Millisecond)
	_, err = st.StoreBatch(ctx, records("orders", store.StatusParked, store.ReasonExhausted, 1, 1), nil)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		v, _ := value(t, reg, "dlq_worker_parked_records", map[string]string{"route": "orders", "reason": "exhausted"})
		return v == 2
	}, 10*time.Second, 20*time.Millisecond, "the next pass sees the new row")

	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	require.NoError(t, h.Stop(sctx))
	require.NoError(t, h.Stop(sctx), "twice")
}

// A pass that cannot reach PostgreSQL counts the failure of each step and keeps the
// backlog gauges it had; the next pass tries again.
func TestPassCountsFailures(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := storetest.New(t)
	_, err := st.StoreBatch(ctx, records("orders", store.StatusParked, store.ReasonExhausted, 0, 1), nil)
	require.NoError(t, err)
	reg := prometheus.NewRegistry()
	h, err := housekeeping.New(housekeeping.Options{Log: zerolog.New(zerolog.NewTestWriter(t)), Store: st, Registry: reg,
		Retention: store.Retention{Records: time.Hour}})
	require.NoError(t, err)
	require.True(t, h.Pass(ctx))

	st.Close() // PostgreSQL unreachable from now on
	require.False(t, h.Pass(ctx))

	for _, step := range []string{"backlog", "purge"} {
		v, ok := value(t, reg, "dlq_worker_housekeeping_errors_total", map[string]string{"step": step})
		require.True(t, ok, step)
		require.Equal(t, 1.0, v, step)
	}
	v, ok := value(t, reg, "dlq_worker_parked_records", map[string]string{"route": "orders", "reason": "exhausted"})
	require.True(t, ok, "the last count stays")
	require.Equal(t, 1.0, v)
}
