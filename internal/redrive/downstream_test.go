package redrive_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/deadletter"
	"github.com/dlqops/dlq/internal/headers"
	"github.com/dlqops/dlq/internal/redrive"
	"github.com/dlqops/dlq/internal/routes"
	"github.com/dlqops/dlq/internal/store"
	"github.com/dlqops/dlq/internal/store/storetest"
	"github.com/dlqops/dlq/internal/testenv"
	"github.com/dlqops/dlq/internal/testenv/kafkatest"
)

// runFailingService is a service whose downstream is down: a consumer of
// topic that fails every record and dead-letters it through the public deadletter package.
func runFailingService(t *testing.T, bootstrap, topic, dlq string) {
	t.Helper()
	pub, err := deadletter.NewPublisher(deadletter.PublisherConfig{BootstrapServers: bootstrap, Topic: dlq})
	require.NoError(t, err)
	down := errors.New("service B: downstream unavailable")
	svc, err := deadletter.NewConsumer(deadletter.ConsumerConfig{BootstrapServers: bootstrap, Group: testenv.UniqueName("svc-"),
		Topics: []string{topic}, Log: zerolog.Nop()}, pub, func(context.Context, *kafka.Message) error { return down })
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- svc.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
		pub.Close(10 * time.Second)
	})
}

// A downstream that keeps failing: every redriven record comes back to the DLQ. Records
// cycle with their backoff (never redriven before it elapsed; the longer waits pass through
// PostgreSQL as scheduled) until the retry count reaches max_retries, then are parked as
// exhausted; nothing is lost.
func TestDownstreamKeepsFailing(t *testing.T) {
	t.Parallel()
	const n, maxRetries = 200, 4
	bs := testenv.KafkaBootstrap(t)
	// The broker stamps every record on orders with its append time: when a hop was
	// redriven (its dlq-last-failure is the failure's time, not the hop's).
	orders := kafkatest.CreateTopic(t, bs, 2, map[string]string{"message.timestamp.type": "LogAppendTime"})
	dlq := kafkatest.CreateTopic(t, bs, 2, nil)
	st := storetest.New(t)
	runFailingService(t, bs, orders, dlq)

	msgs := make([]*kafka.Message, n)
	for i := range msgs {
		msgs[i] = &kafka.Message{Key: []byte(fmt.Sprintf("k%03d", i)), Value: []byte("order"), TopicPartition: kafka.TopicPartition{Partition: kafka.PartitionAny}}
	}
	produce(t, orders, msgs...)

	rc := route(testenv.UniqueName("downstream-"), dlq)
	retries := maxRetries
	rc.MaxRetries = &retries
	// Delays 100 ms, 400 ms, 1.6 s, 6.4 s: the runs below come far more often than the last
	// ones, so those records wait in PostgreSQL.
	rc.Backoff = &routes.Backoff{Base: 100 * time.Millisecond, Factor: 4, Cap: 10 * time.Second}
	// Every record comes back by design here: the breaker would hold them
	// (TestBreakerHoldsADownstreamOutage); this test is about the backoff alone.
	rc.Breaker.Disabled = true
	e := startEngineWith(t, redrive.Options{Store: st, Kafka: kcfg(t)}, rc)
	exhausted := store.Filter{Statuses: []store.Status{store.StatusParked}, Reasons: []store.Reason{store.ReasonExhausted}}
	runs := 0
	require.Eventually(t, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if e.RunNow(ctx, rc.Name) == nil {
			runs++
		}
		got, err := st.Count(ctx, exhausted)
		return err == nil && got == n
	}, 3*time.Minute, 50*time.Millisecond)

	// Parked as exhausted after exactly max_retries redrives, once per record.
	records, err := st.ListAfter(context.Background(), exhausted, 0, 2*n)
	require.NoError(t, err)
	parkedKeys := map[string]bool{}
	for _, r := range records {
		require.Equal(t, maxRetries, r.RetryCount, "key %s", r.Key)
		require.False(t, parkedKeys[string(r.Key)], "key %s parked twice", r.Key)
		parkedKeys[string(r.Key)] = true
	}
	require.Len(t, parkedKeys, n)

	// Every hop on the target came after its DLQ record's backoff, and each record's last
	// hop carries retry count max_retries.
	envelope := func(m *kafka.Message) headers.Envelope { return headers.Decode(headers.From(m.Headers)).Envelope }
	failures := map[headers.Coordinates]headers.Envelope{}
	for _, m := range readAll(t, dlq) {
		failures[headers.Coordinates{Topic: dlq, Partition: m.TopicPartition.Partition, Offset: int64(m.TopicPartition.Offset)}] = envelope(m)
	}
	lastHop := map[string]int{}
	hops := 0
	for _, m := range readAll(t, orders) {
		env := envelope(m)
		if env.RedriveID == nil {
			continue // the original record
		}
		hops++
		failed, ok := failures[*env.RedriveID]
		require.True(t, ok, "hop from unknown DLQ record %v", *env.RedriveID)
		due := rc.Backoff.Policy().Due(failed.LastFailure, failed.RetryCount, 0.5)
		require.False(t, m.Timestamp.Before(due), "redriven at %s, due at %s (retry %d)", m.Timestamp, due, failed.RetryCount)
		require.Equal(t, failed.LastFailure, env.LastFailure, "a hop carries the time of the failure it retries")
		require.Equal(t, failed.RetryCount+1, env.RetryCount)
		lastHop[string(m.Key)] = max(lastHop[string(m.Key)], env.RetryCount)
	}
	require.Len(t, lastHop, n)
	for k, rc := range lastHop {
		require.Equal(t, maxRetries, rc, "key %s", k)
	}
	viaStore, err := st.Count(context.Background(), store.Filter{Statuses: []store.Status{store.StatusRedriven}})
	require.NoError(t, err)
	require.Positive(t, viaStore, "no record waited for its backoff in PostgreSQL")
	rep := requireConserved(t, st, dlq, rc.Group)
	require.Equal(t, n*(maxRetries+1), rep.Checked)
	t.Logf("%d runs, %d hops (%d through PostgreSQL as scheduled); %s", runs, hops, viaStore, rep)
}
