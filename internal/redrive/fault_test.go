package redrive_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/config"
	"github.com/dlqops/dlq/internal/redrive"
	"github.com/dlqops/dlq/internal/redrive/routes"
	"github.com/dlqops/dlq/internal/store"
	"github.com/dlqops/dlq/internal/store/storetest"
	"github.com/dlqops/dlq/internal/testenv"
	"github.com/dlqops/dlq/internal/testenv/kafkatest"
)

// seedDue returns n DLQ records due now for target, every tenth exhausted (parked).
func seedDue(n int, target string) []*kafka.Message {
	msgs := make([]*kafka.Message, n)
	for i := range msgs {
		retry := "1"
		if i%10 == 0 {
			retry = "5"
		}
		msgs[i] = &kafka.Message{TopicPartition: kafka.TopicPartition{Partition: kafka.PartitionAny}, Key: []byte(fmt.Sprintf("k%d", i)),
			Value: []byte("v"), Headers: []kafka.Header{hdr("retryCount", retry), hdr("originalTopic", target)}}
	}
	return msgs
}

// runInBackground starts a run of route and returns where its outcome arrives.
func runInBackground(e *redrive.Engine, route string) <-chan error {
	out := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		out <- e.RunNow(ctx, route)
	}()
	return out
}

// ready reports the engine's readiness as a bool, for Eventually.
func ready(e *redrive.Engine, want bool) func() bool {
	return func() bool { return (e.Ready(context.Background()) == nil) == want }
}

// outage is how long the fault tests keep a service down.
const outage = 30 * time.Second

// waitOutage returns once d has passed since from: the injected fault's duration, not a
// synchronization.
func waitOutage(from time.Time, d time.Duration) {
	<-time.After(time.Until(from.Add(d)))
}

// The broker (holding the DLQ, the target and the group) stops for 30 s in the middle of
// a run: readiness turns false, the run resumes by itself once the broker is back and
// finishes, readiness turns true, and nothing is lost.
func TestBrokerOutageMidRun(t *testing.T) {
	t.Parallel()
	const n = 6000
	b := kafkatest.StartBroker(t)
	bs := b.Bootstrap()
	kc := config.Kafka{BootstrapServers: bs}
	dlq := kafkatest.CreateTopic(t, bs, 2, nil)
	orders := kafkatest.CreateTopic(t, bs, 2, nil)
	st := storetest.New(t)
	produceTo(t, bs, dlq, seedDue(n, orders)...)

	rc := route(testenv.UniqueName("broker-"), dlq)
	rc.Backoff = &routes.Backoff{None: true}
	rc.RateLimit = 300 // a run of ~20 s, so that the outage hits it
	e := startEngineWith(t, redrive.Options{Store: st, Kafka: kc}, rc)
	waitAssigned(t, bs, rc.Group, 2)
	run := runInBackground(e, rc.Name)
	targetEnd := watermarks(t, bs, orders)
	require.Eventually(t, func() bool { return total(targetEnd()) >= n/10 }, 2*time.Minute, 50*time.Millisecond)

	down := time.Now()
	b.Stop()
	require.Eventually(t, ready(e, false), outage, 100*time.Millisecond, "ready while the broker is down")
	waitOutage(down, outage)
	select {
	case err := <-run:
		t.Fatalf("the run ended during the outage: %v", err)
	default:
	}
	b.Start()

	select {
	case err := <-run:
		require.NoError(t, err, "the run resumes and finishes by itself")
	case <-time.After(3 * time.Minute):
		t.Fatal("the run did not finish within 3 minutes of the broker's return")
	}
	require.Eventually(t, ready(e, true), time.Minute, 100*time.Millisecond)
	waitCommitted(t, committedOffsets(t, bs, dlq, rc.Group, 2), watermarks(t, bs, dlq), time.Minute)
	rep := requireConservedOn(t, kc, st, dlq, rc.Group)
	require.Equal(t, n, rep.Checked)
	require.Equal(t, n/10, rep.InStore[store.StatusParked])
	t.Logf("%s", rep)
}
