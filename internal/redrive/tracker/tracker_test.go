package tracker

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestWatermarkMovesOverContiguousDonePrefix(t *testing.T) {
	p := New(10)
	require.Equal(t, int64(10), p.Watermark())
	for o := int64(10); o < 15; o++ {
		require.NoError(t, p.Add(o))
	}
	require.Equal(t, int64(10), p.Watermark())
	require.True(t, p.Done(12))
	require.True(t, p.Done(11))
	require.Equal(t, int64(10), p.Watermark(), "10 is still in flight")
	require.True(t, p.Done(10))
	require.Equal(t, int64(13), p.Watermark())
	require.Equal(t, 2, p.Open())
	require.True(t, p.Done(14))
	require.True(t, p.Done(13))
	require.Equal(t, int64(15), p.Watermark())
	require.Zero(t, p.Open())
}

func TestGapsCountAsDone(t *testing.T) {
	p := New(0)
	require.NoError(t, p.Add(3)) // 0..2 compacted away
	require.NoError(t, p.Add(7))
	require.Equal(t, int64(3), p.Watermark())
	require.True(t, p.Done(3))
	require.Equal(t, int64(7), p.Watermark())
	require.True(t, p.Done(7))
	require.Equal(t, int64(8), p.Watermark())
	require.Equal(t, int64(8), p.Next())
}

func TestRejectsMisuse(t *testing.T) {
	p := New(5)
	require.Error(t, p.Add(4), "below the start")
	require.NoError(t, p.Add(5))
	require.Error(t, p.Add(5), "twice")
	require.False(t, p.Done(6), "never added")
	require.True(t, p.Done(5))
	require.False(t, p.Done(5), "twice")
	require.Equal(t, int64(6), p.Watermark())
}

// Against a model: whatever the completion order, the watermark is the lowest offset not
// done, and memory is reused.
func TestRandomOrderAgainstModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	p := New(100)
	done := map[int64]bool{}
	var added []int64
	next := int64(100)
	for range 4000 {
		if rng.IntN(2) == 0 || len(added) == len(done) {
			next += int64(1 + rng.IntN(2)) // sometimes a gap
			require.NoError(t, p.Add(next))
			added = append(added, next)
			next++
			continue
		}
		var o int64
		for {
			o = added[rng.IntN(len(added))]
			if !done[o] {
				break
			}
		}
		require.True(t, p.Done(o))
		done[o] = true
		want := next
		for _, a := range added {
			if !done[a] {
				want = a
				break
			}
		}
		require.Equal(t, want, p.Watermark())
		require.Equal(t, len(added)-len(done), p.Open())
	}
	require.Less(t, cap(p.pending), 2*len(added))
}

// A record that stays open (a produce retried after a backoff, a batch PostgreSQL has not
// answered) holds the watermark while the rest of the partition is read and done past
// it: the tracker's memory stays bounded by the records open, not by how many were read.
func TestMemoryBoundedByOpenOffsetsBehindAStraggler(t *testing.T) {
	p := New(0)
	require.NoError(t, p.Add(0)) // the straggler
	for o := int64(1); o <= 1_000_000; o++ {
		if err := p.Add(o); err != nil {
			t.Fatal(err)
		}
		if o > 100 && !p.Done(o-100) { // a hundred records in flight behind it
			t.Fatalf("offset %d was not pending", o-100)
		}
	}
	require.Equal(t, int64(0), p.Watermark())
	require.Equal(t, 101, p.Open())
	require.Less(t, cap(p.pending), 4096, "entries kept for 101 open offsets")
	require.True(t, p.Done(0))
	require.Equal(t, int64(1_000_000-99), p.Watermark())
	require.False(t, p.Done(5), "done long ago")
}
