package headers

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestPermanentMarkBelongsToOneFailure: the mark is written when set, read back, and
// gone from the next hop, whether a redrive or a replay, so that a record failing again
// for a transient reason is retried.
func TestPermanentMarkBelongsToOneFailure(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	e := Envelope{OriginalTopic: "orders", OriginalPartition: -1, OriginalOffset: -1, ErrorClass: "validation", Permanent: true}
	written := Encode([]Header{{Key: "traceparent", Value: []byte("x")}}, e, EncodeOptions{})
	require.Contains(t, written, Header{Key: KeyErrorPermanent, Value: []byte("true")})
	require.True(t, Decode(written).Envelope.Permanent)

	from := Coordinates{Topic: "orders.dlq", Partition: 0, Offset: 7}
	for name, next := range map[string]Envelope{
		"redriven": Decode(written).Envelope.Redriven(from, now),
		"replayed": Decode(written).Envelope.Replayed(Replay{Actor: "alice", JobID: "j", ReplayID: "r"}),
	} {
		hop := Encode(written, next, EncodeOptions{})
		for _, h := range hop {
			require.NotEqual(t, KeyErrorPermanent, h.Key, name)
		}
		require.False(t, Decode(hop).Envelope.Permanent, name)
	}
}
