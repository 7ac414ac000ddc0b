// Package jobstest parks records with every awkward shape and checks that replays
// delivered them exactly, for the tests of the job runner and of the end-to-end path.
package jobstest

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/headers"
	"github.com/dlqops/dlq/internal/routes"
	"github.com/dlqops/dlq/internal/store"
	"github.com/dlqops/dlq/internal/testenv"
	"github.com/dlqops/dlq/internal/testenv/kafkatest"
)

// Consume reads every record of topic, at least n, from the beginning.
func Consume(t testing.TB, topic string, partitions, n int) []*kafka.Message {
	t.Helper()
	return ConsumeFrom(t, testenv.KafkaBootstrap(t), topic, partitions, n)
}

// ConsumeFrom is Consume on the cluster of bootstrap.
func ConsumeFrom(t testing.TB, bootstrap, topic string, partitions, n int) []*kafka.Message {
	t.Helper()
	c, err := kafka.NewConsumer(&kafka.ConfigMap{"bootstrap.servers": bootstrap,
		"group.id": testenv.UniqueName("g-"), "enable.auto.commit": false})
	require.NoError(t, err)
	defer c.Close()
	var tps []kafka.TopicPartition
	for p := range partitions {
		tps = append(tps, kafka.TopicPartition{Topic: &topic, Partition: int32(p), Offset: kafka.OffsetBeginning})
	}
	require.NoError(t, c.Assign(tps))
	total := 0
	for p := range partitions {
		// Right after Assign the client may not know the partition yet.
		var high int64
		require.EventuallyWithT(t, func(c2 *assert.CollectT) {
			var err error
			_, high, err = c.QueryWatermarkOffsets(topic, int32(p), 10000)
			assert.NoError(c2, err)
		}, 30*time.Second, 100*time.Millisecond)
		total += int(high)
	}
	require.GreaterOrEqual(t, total, n)
	n = total
	var out []*kafka.Message
	deadline := time.Now().Add(2 * time.Minute)
	for len(out) < n {
		require.True(t, time.Now().Before(deadline), "read %d of %d records", len(out), n)
		m, err := c.ReadMessage(time.Second)
		if err != nil {
			continue
		}
		out = append(out, m)
	}
	return out
}

// Records is how many records topic holds (the sum of its partitions' high watermarks);
// 0 when it does not exist.
func Records(t testing.TB, topic string) int64 {
	t.Helper()
	p, err := kafka.NewProducer(&kafka.ConfigMap{"bootstrap.servers": testenv.KafkaBootstrap(t)})
	require.NoError(t, err)
	defer p.Close()
	md, err := p.GetMetadata(&topic, false, 10000)
	require.NoError(t, err)
	tm, ok := md.Topics[topic]
	if !ok || tm.Error.Code() != kafka.ErrNoError {
		return 0
	}
	var n int64
	for _, part := range tm.Partitions {
		_, high, err := p.QueryWatermarkOffsets(topic, part.ID, 10000)
		require.NoError(t, err)
		n += high
	}
	return n
}

// Route is the configuration of a route named name (Park names a record's route after its
// original topic) whose records may go to the topics allowed names or matches (any when
// empty).
func Route(name string, allowed ...string) routes.Config {
	rc := routes.Config{Name: name, Topics: []string{name + ".dlq"}, AllowedTargets: allowed}
	rc.WithDefaults()
	return rc
}

// Routes are routes named names, allowing every target.
func Routes(names ...string) []routes.Config {
	out := make([]routes.Config, len(names))
	for i, n := range names {
		out[i] = Route(n)
	}
	return out
}

// Park stores records of original topic topic: record i has key "k<i>" (null for i%5 == 1),
// a value (null for i%5 == 2, empty for i%5 == 3), foreign headers including a duplicate
// key and a null value, and a plain-style retry count.
func Park(t testing.TB, st *store.Store, topic string, n int) {
	t.Helper()
	const chunk = 5000
	// Within the broker's retention (7 days): the broker deletes older records soon after
	// they are replayed (it rolls a segment for each batch of them), and Consume would miss
	// them.
	since := time.Now().Add(-time.Hour).UnixMilli()
	for start := 0; start < n; start += chunk {
		recs := make([]store.NewRecord, 0, chunk)
		for i := start; i < min(n, start+chunk); i++ {
			r := store.NewRecord{
				DLQ:    store.Coordinates{Topic: topic + ".dlq", Partition: 0, Offset: int64(i)},
				Origin: store.Origin{Topic: topic, Partition: int32(i % 3), Offset: int64(i)},
				Key:    []byte("k" + strconv.Itoa(i)), Value: []byte(fmt.Sprintf(`{"i":%d}`, i)),
				Headers: []store.Header{
					{Key: "trace", Value: []byte{0, 0xff, byte(i)}}, {Key: "dup", Value: []byte("a")},
					{Key: "dup", Value: []byte("b")}, {Key: "nullh"}, {Key: "retryCount", Value: []byte("5")},
					{Key: "originalTopic", Value: []byte(topic)},
				},
				Timestamp:  time.UnixMilli(since + int64(i)).UTC(),
				RetryCount: 5, ErrorClass: "Timeout", ErrorMessage: "timed out",
				Reason: store.ReasonExhausted, Status: store.StatusParked, Route: topic,
			}
			switch i % 5 {
			case 1:
				r.Key = nil
			case 2:
				r.Value = nil
			case 3:
				r.Value = []byte{}
			}
			recs = append(recs, r)
		}
		_, err := st.StoreBatch(context.Background(), recs, nil)
		require.NoError(t, err)
	}
}

// CheckReplayed verifies that every message is the stored record it claims to be, byte for
// byte, with our replay headers, and that each record's row says where it went. It returns
// the distinct record ids seen.
func CheckReplayed(t testing.TB, st *store.Store, msgs []*kafka.Message, jobID int64, actor string, resetRetry bool) map[int64]bool {
	t.Helper()
	ctx := context.Background()
	seen := map[int64]bool{}
	for _, m := range msgs {
		env := headers.Decode(headers.From(m.Headers)).Envelope
		require.NotNil(t, env.Replay)
		require.Equal(t, actor, env.Replay.Actor)
		require.Equal(t, strconv.FormatInt(jobID, 10), env.Replay.JobID)
		var recID int64
		_, err := fmt.Sscanf(env.Replay.ReplayID, fmt.Sprintf("%d-%%d", jobID), &recID)
		require.NoError(t, err, env.Replay.ReplayID)
		rec, err := st.Get(ctx, recID)
		require.NoError(t, err)
		require.Equal(t, store.StatusReplayed, rec.Status)
		require.Equal(t, env.Replay.ReplayID, rec.ReplayID)
		require.Equal(t, rec.Key, m.Key)
		require.Equal(t, rec.Value == nil, m.Value == nil, "null value stays null, empty stays empty")
		require.Equal(t, string(rec.Value), string(m.Value))
		require.Equal(t, rec.Timestamp.UnixMilli(), m.Timestamp.UnixMilli())
		var foreign []store.Header
		for _, h := range m.Headers {
			if len(h.Key) < 4 || h.Key[:4] != "dlq-" {
				foreign = append(foreign, store.Header{Key: h.Key, Value: h.Value})
			}
		}
		require.Equal(t, rec.Headers, foreign, "foreign headers byte-identical, in order")
		want := 5
		if resetRetry {
			want = 0
		}
		require.Equal(t, want, env.RetryCount)
		if !seen[recID] {
			// The row names the last copy produced; a duplicate from a crash window may
			// be another.
			require.NotNil(t, rec.Produced)
		}
		seen[recID] = true
	}
	return seen
}

// AuditableDLQ writes n records to topic+".dlq" (one partition, created here), at the
// offsets Park says topic's records were dead-lettered from, and commits a new group's
// offset past them, so that the conservation audit (internal/audit) checks every
// record Park stored. It returns the group.
func AuditableDLQ(t testing.TB, bootstrap, topic string, n int) string {
	t.Helper()
	dlq := kafkatest.CreateNamedTopic(t, bootstrap, topic+".dlq", 1, nil)
	// One request in flight keeps the offsets in order without idempotence, whose producer id a
	// freshly started broker may be slow to grant.
	p, err := kafka.NewProducer(&kafka.ConfigMap{"bootstrap.servers": bootstrap, "acks": "all",
		"max.in.flight.requests.per.connection": 1, "go.delivery.reports": false}) // the watermark below checks delivery
	require.NoError(t, err)
	defer p.Close()
	for i := range n {
		m := &kafka.Message{TopicPartition: kafka.TopicPartition{Topic: &dlq, Partition: 0}, Value: []byte(strconv.Itoa(i))}
		for {
			err := p.Produce(m, nil)
			if err == nil {
				break
			}
			require.Equal(t, kafka.ErrQueueFull, err.(kafka.Error).Code(), "produce: %v", err)
			p.Flush(100)
		}
	}
	require.Zero(t, p.Flush(60_000), "unflushed records")
	_, high, err := p.QueryWatermarkOffsets(dlq, 0, 10_000)
	require.NoError(t, err)
	require.EqualValues(t, n, high, "one offset per record, from 0")
	group := testenv.UniqueName("audit-")
	c, err := kafka.NewConsumer(&kafka.ConfigMap{"bootstrap.servers": bootstrap, "group.id": group})
	require.NoError(t, err)
	defer c.Close()
	// A freshly started broker answers "coordinator load in progress" for a while.
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		_, err := c.CommitOffsets([]kafka.TopicPartition{{Topic: &dlq, Partition: 0, Offset: kafka.Offset(n)}})
		assert.NoError(ct, err)
	}, 2*time.Minute, 500*time.Millisecond)
	return group
}
