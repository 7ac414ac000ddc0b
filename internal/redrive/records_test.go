package redrive

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The records of a partition that librdkafka does not route to the worker's queue (it
// drops a route when it stops fetching the partition; here a reassignment routes
// nothing) come through the consumer's Poll and are redriven the same way, each once.
func TestUnroutedPartitionIsRedrivenThroughPoll(t *testing.T) {
	const n = 2000
	s := newStallScene(t, n, -1)
	s.w.revoke(s.tps)
	s.w.parts.records = nil
	s.w.assign(s.tps)
	ctx := context.Background()
	reply := make(chan error, 1)
	s.w.startRun(ctx, reply)
	require.NotNil(t, s.w.run, "the run started")
	deadline := time.Now().Add(time.Minute)
	for done := false; !done; {
		select {
		case err := <-reply:
			require.NoError(t, err)
			done = true
		default:
			require.True(t, time.Now().Before(deadline), "the run never ended")
			s.w.step(ctx)
		}
	}
	require.Equal(t, int64(n), s.targetHigh(t), "every record redriven, once")
	require.Nil(t, s.w.records.Next(0), "nothing was routed to the worker's queue")
}
