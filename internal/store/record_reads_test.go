package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/store"
	"github.com/dlqops/dlq/internal/store/storetest"
)

// A record reads the same through the generated statements (Get, a claim, a transition)
// as through the listing the filter builder renders (ListAfter), in each state a replay
// lease gives it: the generated queries repeat the columns that queries.go builds for
// the listings, and this holds them together.
func TestGeneratedRecordReadsMatchTheListing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := storetest.New(t)
	alice := store.Actor{Name: "alice"}
	const topic = "dlq.reads"

	recs := parked(topic, 0, 4)
	recs[0].Key, recs[0].Value = nil, nil           // NULL key and value: sizes -1
	recs[1].Key, recs[1].Value = []byte{}, []byte{} // empty, not NULL: sizes 0
	recs = append(recs, scheduled(topic, 4, 2, time.Now().Add(-time.Minute))...)
	_, err := s.StoreBatch(ctx, recs, nil)
	require.NoError(t, err)
	all, err := s.ListAfter(ctx, store.Filter{DLQTopic: topic}, 0, 10)
	require.NoError(t, err)
	require.Len(t, all, 6)
	id := func(offset int64) int64 { return all[offset].ID }

	// One record in each state: leased by a replay, replayed (the outcome in its lease),
	// claimed by a redrive, discarded, retried now, and parked as stored.
	_, err = s.BeginReplay(ctx, id(2), store.ReplayLease{Owner: "w1", Duration: time.Minute, ReplayID: "r-2"}, alice)
	require.NoError(t, err)
	_, err = s.BeginReplay(ctx, id(3), store.ReplayLease{Owner: "w1", Duration: time.Minute, ReplayID: "r-3"}, alice)
	require.NoError(t, err)
	finished, err := s.FinishReplay(ctx, id(3), "w1", store.Coordinates{Topic: "orders", Partition: 1, Offset: 42}, alice)
	require.NoError(t, err)
	require.Equal(t, store.StatusReplayed, finished.Status)
	claim, err := s.ClaimDue(ctx, "", "redriver", 1, time.Minute)
	require.NoError(t, err)
	require.Len(t, claim.Records, 1)
	discarded, err := s.Discard(ctx, id(1), alice)
	require.NoError(t, err)
	retried, err := s.RetryNow(ctx, id(5), alice)
	require.NoError(t, err)

	listed, err := s.ListAfter(ctx, store.Filter{DLQTopic: topic}, 0, 10)
	require.NoError(t, err)
	require.Len(t, listed, 6)
	for _, want := range listed {
		got, err := s.Get(ctx, want.ID)
		require.NoError(t, err)
		require.Equal(t, want, got, "record %d (offset %d, %s)", want.ID, want.DLQ.Offset, want.Status)
	}
	byID := map[int64]store.Record{}
	for _, r := range listed {
		byID[r.ID] = r
	}
	require.Equal(t, byID[claim.Records[0].ID], claim.Records[0], "a claimed record")
	require.Equal(t, byID[id(1)], discarded, "a discarded record")
	require.Equal(t, byID[id(5)], retried, "a record retried now")
	require.Equal(t, byID[id(3)], finished, "a replayed record")

	require.Equal(t, store.StatusReplaying, byID[id(2)].Status)
	require.Equal(t, "w1", byID[id(2)].LeaseOwner, "a replay's holder reads through the lease")
	require.False(t, byID[id(2)].LeaseUntil.IsZero())
	require.Equal(t, -1, byID[id(0)].KeySize)
	require.Equal(t, 0, byID[id(1)].ValueSize)
}
