package redrive_test

import (
	"bytes"
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/redrive"
	"github.com/dlqops/dlq/internal/routes"
	"github.com/dlqops/dlq/internal/store"
	"github.com/dlqops/dlq/internal/store/storetest"
	"github.com/dlqops/dlq/internal/testenv"
	"github.com/dlqops/dlq/internal/testenv/kafkatest"
)

// Operator controls reach the worker through PostgreSQL alone (the admin API writes them
// there): a pause ends the run in progress (RunNow says so, the ledger marks the run
// failed, nothing more is redriven) and refuses new runs; a run an operator requests while
// the route is paused waits for the resume and then starts by itself; nothing is lost.
func TestOperatorControls(t *testing.T) {
	t.Parallel()
	const n = 3000
	ctx := context.Background()
	bs := testenv.KafkaBootstrap(t)
	dlq, orders := seedProcessDLQ(t, bs, n, 2, 16)
	st := storetest.New(t)
	rc := route(testenv.UniqueName("controls-"), dlq)
	rc.Backoff = &routes.Backoff{None: true}
	rc.RateLimit = 500 // a run lasts about 6 s: time to pause it in the middle
	e := startEngineWith(t, redrive.Options{Store: st, Kafka: kcfg(t)}, rc)
	waitAssigned(t, bs, rc.Group, 1, 2)
	targetEnd := watermarks(t, bs, orders)
	run := runInBackground(e, rc.Name)
	require.Eventually(t, func() bool { return kafkatest.Total(targetEnd()) >= n/10 }, time.Minute, 20*time.Millisecond)

	operator := store.Actor{Name: "alice"}
	_, err := st.PauseRoute(ctx, rc.Name, true, operator)
	require.NoError(t, err)
	select {
	case err := <-run:
		require.ErrorIs(t, err, redrive.ErrRunInterrupted)
	case <-time.After(30 * time.Second):
		t.Fatal("the run went on for 30 s after the pause")
	}
	paused := kafkatest.Total(targetEnd())
	require.Less(t, paused, int64(n*9/10), "the run ended before the pause reached it")
	runs, err := st.ListRuns(ctx, rc.Name, 1)
	require.NoError(t, err)
	require.Equal(t, store.RunFailed, runs[0].Status)
	require.Equal(t, "interrupted", runs[0].Error)

	// Paused: neither a direct run nor an operator's request starts one.
	require.ErrorContains(t, e.RunNow(ctx, rc.Name), "paused")
	_, err = st.RequestRun(ctx, rc.Name, operator)
	require.NoError(t, err)
	time.Sleep(time.Second) // ten control polls
	require.Equal(t, paused, kafkatest.Total(targetEnd()), "records redriven while the route was paused")

	_, err = st.PauseRoute(ctx, rc.Name, false, operator)
	require.NoError(t, err)
	waitCommitted(t, committedOffsets(t, bs, dlq, rc.Group, 2), watermarks(t, bs, dlq), time.Minute)
	controls, err := st.RouteControls(ctx)
	require.NoError(t, err)
	for _, c := range controls {
		if c.Route == rc.Name {
			require.True(t, c.RunRequestedAt.IsZero(), "the run request was not taken")
		}
	}
	rep := requireConserved(t, st, dlq, rc.Group)
	require.Equal(t, n, rep.Checked)
	require.Equal(t, n*9/10, rep.OnTarget)
	t.Logf("paused after %d of %d redriven; %s", paused, n*9/10, rep)
}

// A record the producer refuses before sending it (above its message.max.bytes, here a
// 1.5 MB value in a DLQ that accepts it) comes back from the sender to the loop and is
// parked too_large, byte for byte; the records around it are redriven; nothing is lost.
func TestRefusedProduceIsParked(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	bs := testenv.KafkaBootstrap(t)
	orders := kafkatest.CreateTopic(t, bs, 1, nil)
	dlq := kafkatest.CreateTopic(t, bs, 1, map[string]string{"max.message.bytes": "2000000"})
	huge := bytes.Repeat([]byte{0xab}, 1_500_000)
	p, err := kafka.NewProducer(&kafka.ConfigMap{"bootstrap.servers": bs, "acks": "all", "message.max.bytes": 2_000_000})
	require.NoError(t, err)
	defer p.Close()
	for i, v := range [][]byte{[]byte("before"), huge, []byte("after")} {
		require.NoError(t, p.Produce(&kafka.Message{TopicPartition: kafka.TopicPartition{Topic: &dlq, Partition: 0},
			Key: []byte(strconv.Itoa(i)), Value: v, Headers: []kafka.Header{hdr("retryCount", "1"), hdr("originalTopic", orders)}}, nil))
		require.NoError(t, (<-p.Events()).(*kafka.Message).TopicPartition.Error)
	}

	st := storetest.New(t)
	rc := route(testenv.UniqueName("refused-"), dlq)
	rc.Backoff = &routes.Backoff{None: true}
	e := startEngineWith(t, redrive.Options{Store: st, Kafka: kcfg(t)}, rc)
	waitAssigned(t, bs, rc.Group, 1, 1)
	runNow(t, e, rc.Name)

	records, err := st.ListAfter(ctx, store.Filter{}, 0, 10)
	require.NoError(t, err)
	require.Len(t, records, 1)
	require.Equal(t, store.ReasonTooLarge, records[0].Reason)
	require.Equal(t, huge, records[0].Value)
	rep := requireConserved(t, st, dlq, rc.Group)
	require.Equal(t, 2, rep.OnTarget)
}

// The worker publishes each route's next scheduled run for operators (the admin API's
// next_run_at): the time its schedule fires next.
func TestNextRunIsPublished(t *testing.T) {
	t.Parallel()
	st := storetest.New(t)
	rc := route(testenv.UniqueName("nextrun-"), kafkatest.CreateTopic(t, testenv.KafkaBootstrap(t), 1, nil))
	rc.Schedule = "0 0 1 1 *" // New Year's midnight: far enough not to fire during the test
	sched, err := routes.Parser.Parse(rc.Schedule)
	require.NoError(t, err)
	want := sched.Next(time.Now())
	startEngineWith(t, redrive.Options{Store: st, Kafka: kcfg(t)}, rc)
	var got time.Time
	require.Eventually(t, func() bool {
		controls, err := st.RouteControls(context.Background())
		require.NoError(t, err)
		for _, c := range controls {
			if c.Route == rc.Name {
				got = c.NextRunAt
			}
		}
		return !got.IsZero()
	}, time.Minute, 20*time.Millisecond)
	require.True(t, want.Equal(got), "next run %s, want %s", got, want)
}
