package store_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/store"
	"github.com/dlqops/dlq/internal/store/storetest"
)

func TestPaginationSeesEveryRowOnceDuringInserts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := storetest.New(t)
	_, err := s.StoreBatch(ctx, parked("dlq.page", 0, 1000), nil)
	require.NoError(t, err)
	before, err := s.List(ctx, store.Filter{}, "", store.MaxPageSize)
	require.NoError(t, err)

	stop := make(chan struct{})
	var wg sync.WaitGroup
	var insertErr error
	wg.Go(func() {
		for off := int64(1000); ; off += 10 {
			select {
			case <-stop:
				return
			default:
			}
			if _, insertErr = s.StoreBatch(ctx, parked("dlq.page", off, 10), nil); insertErr != nil {
				return
			}
		}
	})
	seen := map[int64]int{}
	cursor := ""
	for {
		page, err := s.List(ctx, store.Filter{Statuses: []store.Status{store.StatusParked}}, cursor, 37)
		require.NoError(t, err)
		for _, r := range page.Records {
			seen[r.ID]++
		}
		if page.NextCursor == "" {
			break
		}
		cursor = page.NextCursor
	}
	close(stop)
	wg.Wait()
	require.NoError(t, insertErr)
	for _, r := range before.Records {
		require.Equal(t, 1, seen[r.ID], "row %d", r.ID)
	}
	for id, n := range seen {
		require.Equal(t, 1, n, "row %d seen twice", id)
	}
}

func TestListFilters(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := newTestClock()
	s := storetest.New(t, store.WithClock(clock.Now))

	recs := parked("dlq.f", 0, 6)
	recs[1].Origin.Topic = "payments"
	recs[2].Reason, recs[2].ErrorClass = store.ReasonTooLarge, "RecordTooLargeException"
	recs[3].Route = "payments-route"
	recs[4].ErrorMessage = "Connection REFUSED by 10.0.0.1 (100% sure)"
	recs[5].Key = nil
	_, err := s.StoreBatch(ctx, recs[:3], nil)
	require.NoError(t, err)
	t1 := clock.Now()
	clock.Advance(time.Hour)
	_, err = s.StoreBatch(ctx, recs[3:], nil)
	require.NoError(t, err)
	_, err = s.StoreBatch(ctx, scheduled("dlq.g", 0, 1, clock.Now()), nil)
	require.NoError(t, err)

	offsets := func(f store.Filter) []int64 {
		t.Helper()
		page, err := s.List(ctx, f, "", 100)
		require.NoError(t, err)
		out := []int64{}
		for _, r := range page.Records {
			out = append(out, r.DLQ.Offset)
		}
		n, err := s.Count(ctx, f)
		require.NoError(t, err)
		require.EqualValues(t, len(out), n, "Count agrees with List")
		return out
	}
	require.Equal(t, []int64{5, 4, 3, 2, 1, 0}, offsets(store.Filter{DLQTopic: "dlq.f"}))
	require.Equal(t, []int64{0}, offsets(store.Filter{Statuses: []store.Status{store.StatusScheduled}}))
	require.Equal(t, []int64{1}, offsets(store.Filter{OriginalTopic: "payments"}))
	require.Equal(t, []int64{2}, offsets(store.Filter{Reasons: []store.Reason{store.ReasonTooLarge}}))
	require.Equal(t, []int64{2}, offsets(store.Filter{ErrorClass: "RecordTooLargeException"}))
	require.Equal(t, []int64{3}, offsets(store.Filter{Route: "payments-route"}))
	require.Equal(t, []int64{4}, offsets(store.Filter{Key: []byte("key-4")}))
	require.Equal(t, []int64{4}, offsets(store.Filter{ErrorContains: "refused"}))
	require.Equal(t, []int64{4}, offsets(store.Filter{ErrorContains: "100%"}), "% is a plain character")
	require.Equal(t, []int64{2, 1, 0}, offsets(store.Filter{DLQTopic: "dlq.f", StoredTo: t1.Add(time.Second)}))
	require.Equal(t, []int64{5, 4, 3}, offsets(store.Filter{DLQTopic: "dlq.f", StoredFrom: t1.Add(time.Second)}))
	require.Equal(t, []int64{5, 4, 3, 2, 1, 0}, offsets(store.Filter{Statuses: []store.Status{store.StatusParked}, OriginalTopic: "", Key: nil}))
	require.Empty(t, offsets(store.Filter{Key: []byte{}}), "an empty key filter matches empty keys only")

	// Values shaped like SQL are data.
	for _, evil := range []string{"'; DROP TABLE dead_letters; --", `" OR 1=1 --`, "x' OR 'a'='a", "$1", "%s"} {
		require.Empty(t, offsets(store.Filter{
			DLQTopic: evil, OriginalTopic: evil, ErrorClass: evil, Route: evil, ErrorContains: evil,
			Reasons: []store.Reason{store.Reason(evil)}, Statuses: []store.Status{store.Status(evil)}, Key: []byte(evil),
		}))
		require.Empty(t, offsets(store.Filter{ErrorContains: evil}))
	}
	require.Len(t, offsets(store.Filter{}), 7, "the table is still there")
}
