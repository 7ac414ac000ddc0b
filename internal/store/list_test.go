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
	s, clock := storetest.NewClocked(t)

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

// A listing leaves the payloads out, so that a page of large records costs dlq-admin what a
// page of small ones does, and says how large each key and value is (NULL apart from empty).
func TestListLeavesPayloadsOutAndSaysTheirSizes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := storetest.New(t)
	recs := parked("dlq.sizes", 0, 3)
	recs[0].Key, recs[0].Value = nil, nil
	recs[1].Key, recs[1].Value = []byte{}, []byte{}
	recs[2].Value = make([]byte, 1<<20)
	_, err := s.StoreBatch(ctx, recs, nil)
	require.NoError(t, err)

	page, err := s.List(ctx, store.Filter{DLQTopic: "dlq.sizes"}, "", 10)
	require.NoError(t, err)
	require.Len(t, page.Records, 3)
	sizes := map[int64][2]int{}
	var big int64
	for _, r := range page.Records {
		if r.DLQ.Offset == 2 {
			big = r.ID
		}
		require.Nil(t, r.Key, "offset %d", r.DLQ.Offset)
		require.Nil(t, r.Value, "offset %d", r.DLQ.Offset)
		require.Nil(t, r.Headers, "offset %d", r.DLQ.Offset)
		sizes[r.DLQ.Offset] = [2]int{r.KeySize, r.ValueSize}
	}
	require.Equal(t, map[int64][2]int{0: {-1, -1}, 1: {0, 0}, 2: {len("key-2"), 1 << 20}}, sizes)

	whole, err := s.Get(ctx, big)
	require.NoError(t, err)
	require.Equal(t, recs[2].Value, whole.Value, "Get reads the whole record")
	require.Equal(t, recs[2].Headers, whole.Headers)
	require.Equal(t, [2]int{len("key-2"), 1 << 20}, [2]int{whole.KeySize, whole.ValueSize})
}
