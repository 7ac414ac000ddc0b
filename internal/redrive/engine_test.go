package redrive_test

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/dlqops/dlq/internal/audit"
	"github.com/dlqops/dlq/internal/headers"
	"github.com/dlqops/dlq/internal/kafkaclient"
	"github.com/dlqops/dlq/internal/partitioner"
	"github.com/dlqops/dlq/internal/redrive"
	"github.com/dlqops/dlq/internal/routes"
	"github.com/dlqops/dlq/internal/store"
	"github.com/dlqops/dlq/internal/store/storetest"
	"github.com/dlqops/dlq/internal/testenv"
	"github.com/dlqops/dlq/internal/testenv/kafkatest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(removeWorkerAfter{m}, goleak.IgnoreTopFunction("github.com/confluentinc/confluent-kafka-go/v2/kafka.(*handle).eventPoll"))
}

// newClock is a clock the tests move forward, from now.
func newClock() *storetest.Clock   { return storetest.NewClock(time.Now()) }
func ms(t time.Time) string        { return t.UTC().Format(headers.TimeLayout) }
func hdr(k, v string) kafka.Header { return kafka.Header{Key: k, Value: []byte(v)} }
func kcfg(t *testing.T) kafkaclient.Config {
	return kafkaclient.Config{BootstrapServers: testenv.KafkaBootstrap(t)}
}
func route(name, dlq string) routes.Config {
	rc := routes.Config{Name: name, Topics: []string{dlq}, Schedule: "@every 1h"}
	rc.WithDefaults()
	return rc
}
func startEngine(t *testing.T, st *store.Store, clock *storetest.Clock, rcs ...routes.Config) *redrive.Engine {
	t.Helper()
	return startEngineWith(t, redrive.Options{Clock: clock.Now, Store: st, Kafka: kcfg(t)}, rcs...)
}

// startEngineWith starts an engine with o (test logger, own registry and a fast control
// poll unless set) and stops it gracefully when the test ends.
func startEngineWith(t *testing.T, o redrive.Options, rcs ...routes.Config) *redrive.Engine {
	t.Helper()
	return startEngineLogging(t, io.Discard, o, rcs...)
}

// startEngineLogging is startEngineWith that also writes the engine's log to logs, for a
// test that reads it.
func startEngineLogging(t *testing.T, logs io.Writer, o redrive.Options, rcs ...routes.Config) *redrive.Engine {
	t.Helper()
	for i := range rcs {
		rcs[i].WithDefaults()
	}
	o.Log = zerolog.New(zerolog.MultiLevelWriter(logs, zerolog.NewTestWriter(t))).Level(zerolog.InfoLevel)
	if o.Registry == nil {
		o.Registry = prometheus.NewRegistry()
	}
	if o.ControlPoll == 0 {
		o.ControlPoll = 100 * time.Millisecond
	}
	if o.ReadPath == "" {
		o.ReadPath = testenv.ReadPath()
	}
	e, err := redrive.New(rcs, o)
	require.NoError(t, err)
	require.NoError(t, e.Start(context.Background()))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		require.NoError(t, e.Stop(ctx))
	})
	return e
}

// runNow runs route once and waits for it.
func runNow(t *testing.T, e *redrive.Engine, route string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	require.NoError(t, e.RunNow(ctx, route))
}

func produce(t *testing.T, topic string, msgs ...*kafka.Message) {
	t.Helper()
	produceTo(t, testenv.KafkaBootstrap(t), topic, msgs...)
}

func produceTo(t testing.TB, bootstrap, topic string, msgs ...*kafka.Message) {
	t.Helper()
	p, err := kafka.NewProducer(&kafka.ConfigMap{"bootstrap.servers": bootstrap, "acks": "all"})
	require.NoError(t, err)
	defer p.Close()
	for _, m := range msgs {
		if m.TopicPartition.Topic == nil {
			m.TopicPartition = kafka.TopicPartition{Topic: &topic, Partition: m.TopicPartition.Partition}
		}
		require.NoError(t, p.Produce(m, nil))
	}
	for range msgs {
		ev := <-p.Events()
		require.NoError(t, ev.(*kafka.Message).TopicPartition.Error)
	}
}

// readAll returns every record of topic.
func readAll(t *testing.T, topic string) []*kafka.Message {
	t.Helper()
	c, err := kafka.NewConsumer(&kafka.ConfigMap{"bootstrap.servers": testenv.KafkaBootstrap(t), "group.id": testenv.UniqueName("read-"),
		"auto.offset.reset": "earliest", "enable.auto.commit": false})
	require.NoError(t, err)
	defer c.Close()
	md, err := c.GetMetadata(&topic, false, 10000)
	require.NoError(t, err)
	var tps []kafka.TopicPartition
	want := 0
	for _, p := range md.Topics[topic].Partitions {
		low, high, err := c.QueryWatermarkOffsets(topic, p.ID, 10000)
		require.NoError(t, err)
		want += int(high - low)
		tps = append(tps, kafka.TopicPartition{Topic: &topic, Partition: p.ID, Offset: kafka.OffsetBeginning})
	}
	require.NoError(t, c.Assign(tps))
	var out []*kafka.Message
	deadline := time.Now().Add(60 * time.Second)
	for len(out) < want && time.Now().Before(deadline) {
		if m, ok := c.Poll(100).(*kafka.Message); ok {
			out = append(out, m)
		}
	}
	require.Len(t, out, want)
	return out
}

func requireConserved(t *testing.T, st *store.Store, dlq, group string) audit.Report {
	t.Helper()
	return requireConservedOn(t, kcfg(t), st, dlq, group)
}

func requireConservedOn(t *testing.T, kc kafkaclient.Config, st *store.Store, dlq, group string) audit.Report {
	t.Helper()
	rep, err := audit.Run(context.Background(), kc, st, dlq, group)
	require.NoError(t, err)
	require.True(t, rep.OK(), rep.String())
	return rep
}

// One run over a DLQ holding every kind of record: due ones are redriven byte-exact to
// their original partition, or by key as a Java producer would; malformed, exhausted,
// unknown-topic and too-large ones are parked with their reasons; one not yet due waits in
// PostgreSQL without holding back the records behind it, and is redriven once when it is
// due even with two workers.
func TestRunRedrivesParksAndSchedules(t *testing.T) {
	t.Parallel()
	bs := testenv.KafkaBootstrap(t)
	dlq := kafkatest.CreateTopic(t, bs, 1, nil)
	orders := kafkatest.CreateTopic(t, bs, 12, nil)
	small := kafkatest.CreateTopic(t, bs, 1, map[string]string{"max.message.bytes": "2000"})
	missing := testenv.UniqueName("absent-")
	clock := newClock()
	st := storetest.New(t, store.WithClock(clock.Now))
	now := clock.Now()
	old := ms(now.Add(-2 * time.Hour))

	foreign := []kafka.Header{hdr("trace", "a"), {Key: "nul", Value: nil}, hdr("trace", "b"), {Key: "bin", Value: []byte{0, 0xff, 1}}}
	due := func(topic string, extra ...kafka.Header) []kafka.Header {
		return append(append([]kafka.Header{hdr("retryCount", "1"), hdr("originalTopic", topic), hdr(headers.KeyLastFailure, old)}, foreign...), extra...)
	}
	msgs := []*kafka.Message{
		// 0: tombstone with a binary key, original partition 7
		{Key: []byte{0, 1, 2, 0xfe}, Value: nil, Headers: append([]kafka.Header{hdr(headers.KeyRetryCount, "1"), hdr(headers.KeyOriginalTopic, orders),
			hdr(headers.KeyOriginalPartition, "7"), hdr(headers.KeyLastFailure, old)}, foreign...)},
		// 1: empty value, null key, no partition → librdkafka picks
		{Key: nil, Value: []byte{}, Headers: due(orders)},
		// 2: keyed, no partition → Java murmur2
		{Key: []byte("foobar"), Value: []byte("v2"), Headers: due(orders)},
		// 3: not due for an hour (scheduled), must not block 4
		{Key: []byte("later"), Value: []byte("v3"), Headers: []kafka.Header{hdr("retryCount", "1"), hdr("originalTopic", orders), hdr(headers.KeyLastFailure, ms(now))}},
		// 4: binary value
		{Key: []byte("abc"), Value: []byte{0xff, 0, 0xfe}, Headers: due(orders)},
		// 5: no original topic
		{Key: []byte("k5"), Value: []byte("v5"), Headers: []kafka.Header{hdr("retryCount", "1")}},
		// 6: garbled retry count
		{Key: []byte("k6"), Value: []byte("v6"), Headers: []kafka.Header{hdr("retryCount", "many"), hdr("originalTopic", orders)}},
		// 7: exhausted
		{Key: []byte("k7"), Value: []byte("v7"), Headers: []kafka.Header{hdr("retryCount", "5"), hdr("originalTopic", orders)}},
		// 8: original topic does not exist
		{Key: []byte("k8"), Value: []byte("v8"), Headers: due(missing)},
		// 9: too large for its target
		{Key: []byte("k9"), Value: make([]byte, 4000), Headers: due(small)},
	}
	produce(t, dlq, msgs...)

	rc := route("all", dlq)
	rc.Backoff = &routes.Backoff{Base: time.Hour, Factor: 1, Cap: time.Hour}
	e1 := startEngine(t, st, clock, rc)
	require.Eventually(t, func() bool {
		runNow(t, e1, "all")
		rows, err := st.Count(context.Background(), store.Filter{})
		return err == nil && rows == 6
	}, 60*time.Second, 100*time.Millisecond)

	got := readAll(t, orders)
	require.Len(t, got, 4)
	byKey := map[string]*kafka.Message{}
	for _, m := range got {
		byKey[string(m.Key)] = m
	}
	tomb := byKey[string([]byte{0, 1, 2, 0xfe})]
	require.NotNil(t, tomb)
	require.Nil(t, tomb.Value, "a tombstone stays a tombstone")
	require.Equal(t, int32(7), tomb.TopicPartition.Partition, "original partition kept")
	empty := byKey[""]
	require.NotNil(t, empty)
	require.NotNil(t, empty.Value, "an empty value stays empty, not null")
	require.Empty(t, empty.Value)
	require.Nil(t, empty.Key)
	require.Equal(t, partitioner.ForKey([]byte("foobar"), 12), byKey["foobar"].TopicPartition.Partition)
	require.Equal(t, (int32(-790332482)&0x7fffffff)%12, byKey["foobar"].TopicPartition.Partition, "Java's choice")
	require.Equal(t, []byte{0xff, 0, 0xfe}, byKey["abc"].Value)
	for _, m := range got {
		var foreignOut []kafka.Header
		retry := ""
		for _, h := range m.Headers {
			switch h.Key {
			case headers.KeyRetryCount:
				retry = string(h.Value)
			case "trace", "nul", "bin":
				foreignOut = append(foreignOut, h)
			}
		}
		require.Equal(t, foreign, foreignOut, "foreign headers byte-identical, in order")
		require.Equal(t, "2", retry)
	}

	parked := map[store.Reason]int{}
	page, err := st.List(context.Background(), store.Filter{}, "", 100)
	require.NoError(t, err)
	for _, r := range page.Records {
		parked[r.Reason]++
	}
	require.Equal(t, map[store.Reason]int{store.ReasonBackoff: 1, store.ReasonUnroutable: 1, store.ReasonInvalidRetryCount: 1,
		store.ReasonExhausted: 1, store.ReasonUnknownTopic: 1, store.ReasonTooLarge: 1}, parked)
	a := kafkatest.Admin(t, bs)
	md, err := a.GetMetadata(nil, true, 10000)
	require.NoError(t, err)
	require.NotContains(t, md.Topics, missing, "no topic was created")
	requireConserved(t, st, dlq, rc.Group)

	// An hour later, two workers race for the scheduled record: it is redriven once.
	rc2 := rc
	rc2.Backoff = rc.Backoff
	e2 := startEngine(t, st, clock, rc2)
	clock.Advance(time.Hour + time.Minute)
	done := make(chan struct{}, 2)
	for _, e := range []*redrive.Engine{e1, e2} {
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			_ = e.RunNow(ctx, "all")
			done <- struct{}{}
		}()
	}
	<-done
	<-done
	require.Eventually(t, func() bool {
		n, err := st.Count(context.Background(), store.Filter{Statuses: []store.Status{store.StatusRedriven}})
		return err == nil && n == 1
	}, 30*time.Second, 100*time.Millisecond)
	later := 0
	for _, m := range readAll(t, orders) {
		if string(m.Key) == "later" {
			later++
		}
	}
	require.Equal(t, 1, later)
	requireConserved(t, st, dlq, rc.Group)
}
