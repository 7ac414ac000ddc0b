package store_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/store"
	"github.com/dlqops/dlq/internal/store/storetest"
)

func TestConcurrentTransitionsOneWins(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := storetest.New(t)
	_, err := s.StoreBatch(ctx, parked("dlq.race", 0, 20), nil)
	require.NoError(t, err)
	page, err := s.List(ctx, store.Filter{}, "", 20)
	require.NoError(t, err)

	for _, r := range page.Records {
		var wg sync.WaitGroup
		errs := make([]error, 2)
		wg.Go(func() { _, errs[0] = s.Discard(ctx, r.ID, store.Actor{Name: "alice"}) })
		wg.Go(func() {
			_, errs[1] = s.BeginReplay(ctx, r.ID, store.ReplayLease{Owner: "job-worker", Duration: time.Minute}, store.Actor{Name: "bob"})
		})
		wg.Wait()
		won := 0
		for _, err := range errs {
			if err == nil {
				won++
			} else {
				require.ErrorIs(t, err, store.ErrConflict)
			}
		}
		require.Equal(t, 1, won, "record %d", r.ID)
	}

	audit, err := s.ListAudit(ctx, 0, 100)
	require.NoError(t, err)
	outcomes := map[string]int{}
	for _, e := range audit {
		outcomes[e.Outcome]++
	}
	require.Equal(t, map[string]int{"ok": 20, "conflict": 20}, outcomes, "refusals are audited too")
}

func TestReplayLifecycle(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, clock := storetest.NewClocked(t)
	_, err := s.StoreBatch(ctx, append(parked("dlq.replay", 0, 2), scheduled("dlq.replay", 2, 1, clock.Now().Add(time.Hour))...), nil)
	require.NoError(t, err)
	page, err := s.List(ctx, store.Filter{}, "", 10)
	require.NoError(t, err)
	sched, p1, p0 := page.Records[0], page.Records[1], page.Records[2]
	alice := store.Actor{Name: "alice", RequestID: "req-1"}

	_, err = s.BeginReplay(ctx, 1<<40, store.ReplayLease{Owner: "w1", Duration: time.Minute}, alice)
	require.ErrorIs(t, err, store.ErrNotFound)

	lease := store.ReplayLease{Owner: "w1", Duration: time.Minute, JobID: 42, ReplayID: "rp-1"}
	r, err := s.BeginReplay(ctx, p0.ID, lease, alice)
	require.NoError(t, err)
	require.Equal(t, store.StatusReplaying, r.Status)
	require.Equal(t, "w1", r.LeaseOwner)
	require.EqualValues(t, 42, r.JobID)

	// Held: nobody else begins it, and only its owner finishes it.
	_, err = s.BeginReplay(ctx, p0.ID, store.ReplayLease{Owner: "w2", Duration: time.Minute}, alice)
	require.ErrorIs(t, err, store.ErrConflict)
	_, err = s.FinishReplay(ctx, p0.ID, "w2", store.Coordinates{Topic: "orders", Offset: 1}, alice)
	require.ErrorIs(t, err, store.ErrConflict)
	// w1 dies; after its lease w2 takes over and finishes.
	clock.Advance(2 * time.Minute)
	_, err = s.BeginReplay(ctx, p0.ID, store.ReplayLease{Owner: "w2", Duration: time.Minute}, alice)
	require.NoError(t, err)
	r, err = s.FinishReplay(ctx, p0.ID, "w2", store.Coordinates{Topic: "orders", Partition: 2, Offset: 99}, alice)
	require.NoError(t, err)
	require.Equal(t, store.StatusReplayed, r.Status)
	require.Equal(t, &store.Coordinates{Topic: "orders", Partition: 2, Offset: 99}, r.Produced)
	require.Equal(t, "alice", r.ChangedBy)
	_, err = s.Discard(ctx, p0.ID, alice)
	require.ErrorIs(t, err, store.ErrConflict, "replayed is final")

	// Abort puts it back to parked.
	_, err = s.BeginReplay(ctx, p1.ID, lease, alice)
	require.NoError(t, err)
	r, err = s.AbortReplay(ctx, p1.ID, "w1", alice)
	require.NoError(t, err)
	require.Equal(t, store.StatusParked, r.Status)

	// Retry now applies to scheduled records only.
	_, err = s.RetryNow(ctx, p1.ID, alice)
	require.ErrorIs(t, err, store.ErrConflict)
	r, err = s.RetryNow(ctx, sched.ID, alice)
	require.NoError(t, err)
	require.True(t, r.DueAt.Equal(clock.Now()))
	c, err := s.ClaimDue(ctx, "", "w", 10, time.Minute)
	require.NoError(t, err)
	require.Len(t, c.Records, 1)

	audit, err := s.ListAudit(ctx, 0, 100)
	require.NoError(t, err)
	require.Equal(t, "retry_now", audit[0].Action)
	require.Equal(t, []int64{sched.ID}, audit[0].RecordIDs)
	require.Equal(t, "req-1", audit[0].RequestID)
	require.Equal(t, "alice", audit[0].Actor)
}

func TestValidationErrors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := storetest.New(t)
	var ve *store.ValidationError
	for _, c := range []string{"garbage", "AAAA", "AQAAAAAAAAAA"} {
		_, err := s.List(ctx, store.Filter{}, c, 10)
		require.True(t, errors.As(err, &ve), "cursor %q: %v", c, err)
		require.Equal(t, "cursor", ve.Field)
		require.False(t, store.IsRetriable(err))
	}
	_, err := s.List(ctx, store.Filter{}, "", 0)
	require.ErrorAs(t, err, &ve)
	_, err = s.BeginReplay(ctx, 1, store.ReplayLease{}, store.Actor{})
	require.ErrorAs(t, err, &ve)
}
