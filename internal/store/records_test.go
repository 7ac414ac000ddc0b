package store_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/store"
	"github.com/dlqops/dlq/internal/store/storetest"
)

func TestRoundTripIsByteExact(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := storetest.New(t)

	many := make([]store.Header, 1000)
	for i := range many {
		// Duplicate keys, binary values, and a null value among them.
		many[i] = store.Header{Key: fmt.Sprintf("h%d", i%7), Value: []byte{byte(i), 0, 0xff, byte(i >> 8)}}
	}
	many[500].Value = nil
	many[501].Value = []byte{}
	big := bytes.Repeat([]byte{0, 1, 0xfe, 0xff}, 1<<18) // 1 MiB

	recs := parked("dlq.roundtrip", 0, 6)
	recs[0].Key, recs[0].Value = nil, nil                // null key, tombstone
	recs[1].Key, recs[1].Value = []byte{}, []byte{}      // empty, not null
	recs[2].Key, recs[2].Value = []byte{0xc3, 0x28}, big // invalid UTF-8 key, 1 MiB value
	recs[3].Headers = many
	recs[4].Headers = []store.Header{{Key: "\xff\xfe bad utf8", Value: []byte("v")}, {Key: "nul\x00key", Value: nil}, {Key: "", Value: []byte{}}}
	recs[5].Headers = nil
	recs[5].Origin = store.Origin{Topic: "", Partition: -1, Offset: -1} // unroutable: nothing known
	recs[5].Reason = store.ReasonUnroutable
	recs[5].ErrorMessage = "bad \xff bytes and a \x00 NUL"

	res, err := s.StoreBatch(ctx, recs, nil)
	require.NoError(t, err)
	require.Equal(t, 6, res.New)

	records, err := s.ListAfter(ctx, store.Filter{DLQTopic: "dlq.roundtrip"}, 0, 10)
	require.NoError(t, err)
	require.Len(t, records, 6)
	byOffset := map[int64]store.Record{}
	for _, r := range records {
		byOffset[r.DLQ.Offset] = r
	}
	for i, want := range recs {
		got := byOffset[int64(i)]
		require.Equal(t, want.Key == nil, got.Key == nil, "record %d key nullness", i)
		require.Equal(t, want.Value == nil, got.Value == nil, "record %d value nullness", i)
		require.True(t, bytes.Equal(want.Key, got.Key), "record %d key", i)
		require.True(t, bytes.Equal(want.Value, got.Value), "record %d value", i)
		require.Len(t, got.Headers, len(want.Headers), "record %d headers", i)
		for j, h := range want.Headers {
			require.Equal(t, h.Key, got.Headers[j].Key, "record %d header %d key", i, j)
			require.Equal(t, h.Value == nil, got.Headers[j].Value == nil, "record %d header %d value nullness", i, j)
			require.True(t, bytes.Equal(h.Value, got.Headers[j].Value), "record %d header %d value", i, j)
		}
		require.Equal(t, want.Origin.Topic, got.Origin.Topic)
		require.Equal(t, want.Origin.Partition, got.Origin.Partition)
		require.Equal(t, want.Origin.Offset, got.Origin.Offset)
		require.True(t, want.Origin.Timestamp.Equal(got.Origin.Timestamp))
		require.True(t, want.Timestamp.Equal(got.Timestamp))
		require.Equal(t, want.RetryCount, got.RetryCount)
		require.Equal(t, want.Reason, got.Reason)
		require.Equal(t, store.StatusParked, got.Status)
	}
	// Error messages are display text: made valid, not refused.
	require.Equal(t, "bad \uFFFD bytes and a \uFFFD NUL", byOffset[5].ErrorMessage)

	got, err := s.Get(ctx, byOffset[2].ID)
	require.NoError(t, err)
	require.Equal(t, big, got.Value)
	_, err = s.Get(ctx, 1<<40)
	require.ErrorIs(t, err, store.ErrNotFound)
}

func TestStoreBatchIsIdempotent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := storetest.New(t)

	recs := parked("dlq.idem", 0, 5)
	res, err := s.StoreBatch(ctx, recs, nil)
	require.NoError(t, err)
	require.Equal(t, store.BatchResult{Inserted: []bool{true, true, true, true, true}, New: 5}, res)

	// The same coordinates again, changed contents, plus one new record repeated in the batch.
	again := append(parked("dlq.idem", 3, 3), parked("dlq.idem", 5, 1)...)
	again[0].Value = []byte("changed")
	res, err = s.StoreBatch(ctx, again, nil)
	require.NoError(t, err)
	require.Equal(t, store.BatchResult{Inserted: []bool{false, false, true, false}, New: 1}, res)

	records, err := s.ListAfter(ctx, store.Filter{}, 0, 100)
	require.NoError(t, err)
	require.Len(t, records, 6)
	for _, r := range records {
		require.Equal(t, fmt.Sprintf("value-%d", r.DLQ.Offset), string(r.Value), "a stored row is never overwritten")
	}
}

func TestStoreBatchRejectsBadRecords(t *testing.T) {
	t.Parallel()
	s := storetest.New(t)
	bad := scheduled("dlq.bad", 0, 1, time.Time{})
	_, err := s.StoreBatch(context.Background(), bad, nil)
	var ve *store.ValidationError
	require.ErrorAs(t, err, &ve)
	require.Equal(t, "due_at", ve.Field)
}

func TestOverlappingWritersStoreEachCoordinateOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := storetest.New(t)

	// Writer w stores offsets [w*300, w*300+600) in batches of 100: half of it overlaps.
	var wg sync.WaitGroup
	news := make([]int, 2)
	errs := make([]error, 2)
	for w := range 2 {
		wg.Go(func() {
			for b := range 6 {
				res, err := s.StoreBatch(ctx, parked("dlq.overlap", int64(w*300+b*100), 100), nil)
				if err != nil {
					errs[w] = err
					return
				}
				news[w] += res.New
			}
		})
	}
	wg.Wait()
	require.NoError(t, errors.Join(errs...))
	require.Equal(t, 900, news[0]+news[1], "each coordinate reported new exactly once")
	n, err := s.Count(ctx, store.Filter{DLQTopic: "dlq.overlap"})
	require.NoError(t, err)
	require.EqualValues(t, 900, n)
}

func TestStatsAndPurge(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, clock := storetest.NewClocked(t)
	stored := clock.Now()

	_, err := s.StoreBatch(ctx, append(parked("dlq.a", 0, 3), scheduled("dlq.a", 3, 2, stored)...), nil)
	require.NoError(t, err)
	page, err := s.List(ctx, store.Filter{Statuses: []store.Status{store.StatusParked}}, "", 10)
	require.NoError(t, err)
	actor := store.Actor{Name: "alice"}
	_, err = s.Discard(ctx, page.Records[0].ID, actor)
	require.NoError(t, err)

	st, err := s.Stats(ctx)
	require.NoError(t, err)
	require.ElementsMatch(t, []store.StatCount{
		{DLQTopic: "dlq.a", OriginalTopic: "orders", Reason: store.ReasonExhausted, Status: store.StatusParked, Count: 2},
		{DLQTopic: "dlq.a", OriginalTopic: "orders", Reason: store.ReasonExhausted, Status: store.StatusDiscarded, Count: 1},
		{DLQTopic: "dlq.a", OriginalTopic: "orders", Reason: store.ReasonBackoff, Status: store.StatusScheduled, Count: 2},
	}, st.Counts)
	require.True(t, st.OldestParked.Equal(stored))

	clock.Advance(23 * time.Hour)
	n, err := s.Purge(ctx, 24*time.Hour)
	require.NoError(t, err)
	require.Zero(t, n, "too young")
	clock.Advance(2 * time.Hour)
	n, err = s.Purge(ctx, 24*time.Hour)
	require.NoError(t, err)
	require.EqualValues(t, 1, n, "only the discarded row")
	_, err = s.Get(ctx, page.Records[0].ID)
	require.ErrorIs(t, err, store.ErrNotFound)
}
