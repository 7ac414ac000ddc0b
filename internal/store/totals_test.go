package store_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/store"
	"github.com/dlqops/dlq/internal/store/storetest"
)

// A listing's total is exact up to the bound and an estimate marked as such past it, never
// below what the bound proved; the filter and the token's topics bound it as they bound the
// listing.
func TestTotalsExactThenEstimated(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := storetest.New(t)
	big := parked("orders.dlq", 0, store.ExactTotalBound+500)
	small := parked("payments.dlq", 0, 7)
	for i := range small {
		small[i].Origin.Topic = "payments"
	}
	for _, recs := range [][]store.NewRecord{big, small} {
		for start := 0; start < len(recs); start += 5000 {
			_, err := s.StoreBatch(ctx, recs[start:min(start+5000, len(recs))], nil)
			require.NoError(t, err)
		}
	}

	total, err := s.Total(ctx, store.Filter{OriginalTopic: "payments"})
	require.NoError(t, err)
	require.Equal(t, store.Total{Count: 7}, total)
	total, err = s.Total(ctx, store.Filter{OriginalTopics: []string{"payments"}, Statuses: []store.Status{store.StatusScheduled}})
	require.NoError(t, err)
	require.Equal(t, store.Total{Count: 0}, total)
	exact, err := s.Count(ctx, store.Filter{OriginalTopic: "orders"})
	require.NoError(t, err)
	require.EqualValues(t, store.ExactTotalBound+500, exact)

	total, err = s.Total(ctx, store.Filter{OriginalTopic: "orders"})
	require.NoError(t, err)
	require.True(t, total.Estimate)
	require.Greater(t, total.Count, int64(store.ExactTotalBound))

	at, err := s.AuditTotal(ctx, store.AuditFilter{})
	require.NoError(t, err)
	require.Equal(t, store.Total{Count: 0}, at)
	jt, err := s.JobsTotal(ctx, "payments")
	require.NoError(t, err)
	require.Equal(t, store.Total{Count: 0}, jt)
}
