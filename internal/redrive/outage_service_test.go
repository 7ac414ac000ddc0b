package redrive_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/deadletter"
	"github.com/dlqops/dlq/internal/testenv"
)

// outageService is a service of topic whose downstream is down until recovered: while
// down it dead-letters every record through the public deadletter Publisher; once up it
// handles each, and counts the keys it handled.
//
// It dead-letters as fast as the broker acknowledges, many records in flight at once: a
// service that waits for each acknowledgement before reading the next record (the
// deadletter Consumer does, to never store an offset past an unacknowledged record)
// returns a flood at the pace of one acks=all round trip per record, which on a loaded
// machine is too slow for the breaker to see the outage. The scenario is a downstream
// outage, not a slow service.
type outageService struct {
	down    atomic.Bool
	mu      sync.Mutex
	handled map[string]bool
}

// outageInFlight bounds the service's unacknowledged dead-letter publishes.
const outageInFlight = 512

func runOutageService(t *testing.T, bootstrap, topic, dlq string) *outageService {
	t.Helper()
	s := &outageService{handled: map[string]bool{}}
	s.down.Store(true)
	group := testenv.UniqueName("svc-")
	pub, err := deadletter.NewPublisher(deadletter.PublisherConfig{BootstrapServers: bootstrap, Topic: dlq, Group: group})
	require.NoError(t, err)
	c, err := kafka.NewConsumer(&kafka.ConfigMap{"bootstrap.servers": bootstrap, "group.id": group,
		"auto.offset.reset": "earliest"})
	require.NoError(t, err)
	require.NoError(t, c.Subscribe(topic, nil))

	outage := errors.New("service B: downstream unavailable")
	ctx, cancel := context.WithCancel(context.Background())
	var publishing sync.WaitGroup
	slots := make(chan struct{}, outageInFlight)
	done := make(chan error, 1)
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			ev := c.Poll(100)
			switch e := ev.(type) {
			case *kafka.Message:
				if !s.down.Load() {
					s.mu.Lock()
					s.handled[string(e.Key)] = true
					s.mu.Unlock()
					continue
				}
				slots <- struct{}{}
				publishing.Add(1)
				go func() {
					defer func() { <-slots; publishing.Done() }()
					s.deadLetter(ctx, pub, e, outage)
				}()
			case kafka.Error:
				if e.IsFatal() {
					done <- e
					return
				}
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
		publishing.Wait()
		require.NoError(t, c.Close())
		pub.Close(10 * time.Second)
	})
	return s
}

// deadLetter publishes m until the DLQ acknowledges it, as the deadletter Consumer does: a
// record the service failed on is never dropped.
func (s *outageService) deadLetter(ctx context.Context, pub *deadletter.Publisher, m *kafka.Message, cause error) {
	for ctx.Err() == nil {
		pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		_, err := pub.Publish(pctx, m, cause)
		cancel()
		if err == nil {
			return
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (s *outageService) handledKeys() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.handled)
}
