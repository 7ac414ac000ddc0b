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

func TestConcurrentClaimersGetEachRowOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := storetest.New(t)
	const rows = 10_000
	due := time.Now().Add(-time.Minute)
	for from := 0; from < rows; from += 2000 {
		_, err := s.StoreBatch(ctx, scheduled("dlq.claim", int64(from), 2000, due), nil)
		require.NoError(t, err)
	}

	var mu sync.Mutex
	claimed := make(map[int64]int, rows)
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for w := range 4 {
		wg.Go(func() {
			for {
				c, err := s.ClaimDue(ctx, "", "worker", 250, time.Minute)
				if err != nil {
					errs[w] = err
					return
				}
				if len(c.Records) == 0 {
					return
				}
				done := make([]store.Redriven, len(c.Records))
				for i, r := range c.Records {
					done[i] = store.Redriven{ID: r.ID, Produced: store.Coordinates{Topic: r.Origin.Topic, Partition: 3, Offset: r.DLQ.Offset}}
				}
				n, err := s.MarkRedriven(ctx, c.Token, done)
				if err != nil || n != len(done) {
					errs[w] = errors.Join(err, errors.New("lost a lease"))
					return
				}
				mu.Lock()
				for _, r := range c.Records {
					claimed[r.ID]++
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	require.NoError(t, errors.Join(errs...))
	require.Len(t, claimed, rows)
	for id, n := range claimed {
		require.Equal(t, 1, n, "row %d claimed %d times", id, n)
	}
	n, err := s.Count(ctx, store.Filter{Statuses: []store.Status{store.StatusRedriven}})
	require.NoError(t, err)
	require.EqualValues(t, rows, n)
}

func TestExpiredClaimIsClaimedAgain(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, clock := storetest.NewClocked(t)
	now := clock.Now()
	_, err := s.StoreBatch(ctx, append(scheduled("dlq.lease", 0, 3, now), scheduled("dlq.lease", 3, 1, now.Add(time.Hour))...), nil)
	require.NoError(t, err)

	a, err := s.ClaimDue(ctx, "", "a", 10, time.Minute)
	require.NoError(t, err)
	require.Len(t, a.Records, 3, "the record due in an hour is not claimed")
	b, err := s.ClaimDue(ctx, "", "b", 10, time.Minute)
	require.NoError(t, err)
	require.Empty(t, b.Records, "leased rows are not claimable")
	_, err = s.Discard(ctx, a.Records[0].ID, store.Actor{Name: "alice"})
	require.ErrorIs(t, err, store.ErrConflict, "a row being redriven is not the operator's")

	// a crashes; its lease runs out and b takes the rows over.
	clock.Advance(2 * time.Minute)
	b, err = s.ClaimDue(ctx, "", "b", 10, time.Minute)
	require.NoError(t, err)
	require.Len(t, b.Records, 3)
	require.Equal(t, a.Records[0].ID, b.Records[0].ID, "oldest due first")

	produced := []store.Redriven{{ID: a.Records[0].ID, Produced: store.Coordinates{Topic: "orders", Partition: 1, Offset: 7}}}
	n, err := s.MarkRedriven(ctx, a.Token, produced)
	require.NoError(t, err)
	require.Zero(t, n, "a lost its lease")
	n, err = s.MarkRedriven(ctx, b.Token, produced)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	got, err := s.Get(ctx, a.Records[0].ID)
	require.NoError(t, err)
	require.Equal(t, store.StatusRedriven, got.Status)
	require.Equal(t, &store.Coordinates{Topic: "orders", Partition: 1, Offset: 7}, got.Produced)
	require.Empty(t, got.LeaseOwner)

	// A transient produce failure gives the rest back for later.
	later := clock.Now().Add(10 * time.Minute)
	n, err = s.ReleaseClaim(ctx, b.Token, []int64{b.Records[1].ID, b.Records[2].ID}, later)
	require.NoError(t, err)
	require.Equal(t, 2, n)
	c, err := s.ClaimDue(ctx, "", "c", 10, time.Minute)
	require.NoError(t, err)
	require.Empty(t, c.Records)
	clock.Advance(time.Hour)
	c, err = s.ClaimDue(ctx, "", "c", 10, time.Minute)
	require.NoError(t, err)
	require.Len(t, c.Records, 3)
}

// A worker claims only the scheduled records of the routes it runs.
func TestClaimIsLimitedToTheRoute(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, clock := storetest.NewClocked(t)
	recs := append(scheduled("dlq.a", 0, 2, clock.Now()), scheduled("dlq.b", 0, 3, clock.Now())...)
	for i := range recs[2:] {
		recs[2+i].Route = "payments"
	}
	_, err := s.StoreBatch(ctx, recs, nil)
	require.NoError(t, err)

	c, err := s.ClaimDue(ctx, "payments", "w", 10, time.Minute)
	require.NoError(t, err)
	require.Len(t, c.Records, 3)
	for _, r := range c.Records {
		require.Equal(t, "payments", r.Route)
	}
	c, err = s.ClaimDue(ctx, "", "w", 10, time.Minute)
	require.NoError(t, err)
	require.Len(t, c.Records, 2, "the orders rows were left for their route")
}
