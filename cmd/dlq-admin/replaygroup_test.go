package main

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/routes"
	"github.com/dlqops/dlq/internal/store"
)

// A replay, single or bulk, takes --redrive-to and its job keeps it; a value that is not
// a redrive_to is refused.
func TestCLIReplayRedriveTo(t *testing.T) {
	t.Parallel()
	s := newStack(t, nil)
	ctx := context.Background()
	var recs []store.NewRecord
	for i := range 2 {
		recs = append(recs, store.NewRecord{
			DLQ: store.Coordinates{Topic: "orders.dlq", Offset: int64(i)}, Origin: store.Origin{Topic: "orders", Partition: 0, Offset: int64(i)},
			Value: []byte("v"), Timestamp: time.Now(), Reason: store.ReasonExhausted, Status: store.StatusParked, Route: "orders",
		})
	}
	_, err := s.store.StoreBatch(ctx, recs, nil)
	require.NoError(t, err)

	_, err = s.cli(t, "replay", "1", "--redrive-to", "everyone")
	require.ErrorContains(t, err, "redrive_to")
	_, err = s.cli(t, "replay", "1", "--redrive-to", "group_header")
	require.NoError(t, err)
	_, err = s.cli(t, "bulk", "replay", "--ids", "2", "--redrive-to", "group_topic", "--yes", "--detach")
	require.NoError(t, err)

	jobs, err := s.store.ListJobs(ctx, 1<<62, 10)
	require.NoError(t, err)
	got := map[int64]string{}
	for _, j := range jobs {
		got[j.RecordIDs[0]] = j.RedriveTo
	}
	require.Equal(t, map[int64]string{1: routes.RedriveToGroupHeader, 2: routes.RedriveToGroupTopic}, got)
}
