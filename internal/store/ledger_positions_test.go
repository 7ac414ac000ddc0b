package store_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/store"
	"github.com/dlqops/dlq/internal/store/storetest"
)

// A ledger position only moves forward, per group and partition; gaps are listed per group
// and topic in offset order.
func TestLedgerPositionsAndGaps(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := storetest.New(t)

	require.NoError(t, s.AdvanceLedgerPositions(ctx, "g1", []store.Coordinates{{Topic: "dlq", Partition: 0, Offset: 10}, {Topic: "dlq", Partition: 1, Offset: 5}}))
	require.NoError(t, s.AdvanceLedgerPositions(ctx, "g1", []store.Coordinates{{Topic: "dlq", Partition: 0, Offset: 7}, {Topic: "dlq", Partition: 1, Offset: 9}}))
	require.NoError(t, s.AdvanceLedgerPositions(ctx, "g2", []store.Coordinates{{Topic: "dlq", Partition: 0, Offset: 1}}))
	pos, err := s.LedgerPositions(ctx, "g1")
	require.NoError(t, err)
	require.ElementsMatch(t, []store.Coordinates{{Topic: "dlq", Partition: 0, Offset: 10}, {Topic: "dlq", Partition: 1, Offset: 9}}, pos,
		"10 is kept over 7; 5 moves to 9")

	require.NoError(t, s.RecordGap(ctx, store.Gap{Group: "g1", Route: "r", Topic: "dlq", Partition: 1, From: 20, To: 30, Cause: store.GapJump, Lost: true}))
	require.NoError(t, s.RecordGap(ctx, store.Gap{Group: "g1", Route: "r", Topic: "dlq", Partition: 0, From: 3, To: 4, Cause: store.GapBelowLogStart, Lost: true}))
	require.NoError(t, s.RecordGap(ctx, store.Gap{Group: "g2", Route: "r2", Topic: "dlq", Partition: 0, From: 3, To: 4, Cause: store.GapBackward}))
	var verr *store.ValidationError
	require.ErrorAs(t, s.RecordGap(ctx, store.Gap{Group: "g1", Topic: "dlq", From: 4, To: 4, Cause: store.GapJump}), &verr)
	gaps, err := s.LedgerGaps(ctx, "g1", "dlq")
	require.NoError(t, err)
	require.Len(t, gaps, 2)
	require.Equal(t, int32(0), gaps[0].Partition)
	require.Equal(t, store.GapBelowLogStart, gaps[0].Cause)
	require.Equal(t, store.Gap{Group: "g1", Route: "r", Topic: "dlq", Partition: 1, From: 20, To: 30, Cause: store.GapJump, Lost: true, RecordedAt: gaps[1].RecordedAt}, gaps[1])
	require.False(t, gaps[1].RecordedAt.IsZero())
}
