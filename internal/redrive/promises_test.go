package redrive_test

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/headers"
	"github.com/dlqops/dlq/internal/redrive"
	"github.com/dlqops/dlq/internal/routes"
	"github.com/dlqops/dlq/internal/store"
	"github.com/dlqops/dlq/internal/store/storetest"
	"github.com/dlqops/dlq/internal/testenv"
	"github.com/dlqops/dlq/internal/testenv/kafkatest"
	"github.com/dlqops/dlq/internal/testenv/metrictest"
)

// syncBuffer is a log sink the engine's goroutines write to while the test reads it.
type syncBuffer struct{ testenv.SyncBuffer }

// lines returns the JSON log lines written so far whose message starts with msg.
func (b *syncBuffer) lines(t *testing.T, msg string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range strings.Split(b.String(), "\n") {
		var m map[string]any
		if l == "" || json.Unmarshal([]byte(l), &m) != nil {
			continue
		}
		if s, _ := m["message"].(string); strings.HasPrefix(s, msg) {
			out = append(out, m)
		}
	}
	return out
}

// The header promises, end to end through one run: Spring's not-before hint schedules a
// record that the route would redrive now; a record Spring failed again after our redrive
// is parked with Spring's newest error, not our first one; a Spring record redriven for
// the first time gets its first dead-lettering as first failure; decoder warnings are
// counted by kind and logged with the record's coordinates.
func TestHeaderPromises(t *testing.T) {
	t.Parallel()
	bs := testenv.KafkaBootstrap(t)
	dlq := kafkatest.CreateTopic(t, bs, 1, nil)
	orders := kafkatest.CreateTopic(t, bs, 1, nil)
	clock := newClock()
	st := storetest.New(t, store.WithClock(clock.Now))
	now := clock.Now()
	hint := now.Add(time.Hour).Truncate(time.Millisecond)
	deadLettered := now.Add(-2 * time.Hour).Truncate(time.Millisecond)
	long := func(n int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(n)) }

	produce(t, dlq,
		// 0: Spring retry-topic record whose backoff ends in an hour
		&kafka.Message{Key: []byte("hinted"), Value: []byte("v0"), Headers: []kafka.Header{
			hdr("kafka_dlt-original-topic", orders), {Key: "retry_topic-backoff-timestamp", Value: long(hint.UnixMilli())}}},
		// 1: redriven by us with our error, dead-lettered again by Spring, now exhausted
		&kafka.Message{Key: []byte("again"), Value: []byte("v1"), Headers: []kafka.Header{
			hdr(headers.KeyRetryCount, "5"), hdr(headers.KeyOriginalTopic, orders),
			hdr(headers.KeyErrorClass, "FirstError"), hdr(headers.KeyErrorMessage, "first failure"),
			hdr(headers.KeyLastFailure, ms(now.Add(-time.Hour))), hdr(headers.KeyRedriveID, dlq+"/0/0"),
			hdr("kafka_dlt-original-topic", orders),
			hdr("kafka_dlt-exception-fqcn", "java.lang.IllegalStateException"), hdr("kafka_dlt-exception-message", "newest failure")}},
		// 2: dead-lettered by Spring two hours ago, never redriven
		&kafka.Message{Key: []byte("first"), Value: []byte("v2"), Timestamp: deadLettered, TimestampType: kafka.TimestampCreateTime,
			Headers: []kafka.Header{hdr("kafka_dlt-original-topic", orders), hdr("kafka_dlt-exception-fqcn", "E")}},
		// 3: a duplicated retry count and a garbled partition: redriven, warned about
		&kafka.Message{Key: []byte("warned"), Value: []byte("v3"), Headers: []kafka.Header{
			hdr("kafka_dlt-original-topic", orders), hdr("kafka_dlt-original-partition", "{p}"),
			hdr("retry_topic-attempts", "1"), hdr("retry_topic-attempts", "1")}},
	)

	clock.Advance(time.Minute) // records produced just now are due under `backoff: none`
	rc := route("promises", dlq)
	rc.Backoff = &routes.Backoff{None: true}
	reg := prometheus.NewRegistry()
	logs := &syncBuffer{}
	e := startEngineLogging(t, logs, redrive.Options{Clock: clock.Now, Store: st, Kafka: kcfg(t), Registry: reg}, rc)
	require.Eventually(t, func() bool {
		runNow(t, e, rc.Name)
		n, err := st.Count(context.Background(), store.Filter{})
		return err == nil && n == 2
	}, 60*time.Second, 100*time.Millisecond)

	records, err := st.ListAfter(context.Background(), store.Filter{}, 0, 10)
	require.NoError(t, err)
	rows := map[string]store.Record{}
	for _, r := range records {
		rows[string(r.Key)] = r
	}
	require.Equal(t, store.StatusScheduled, rows["hinted"].Status, "the not-before hint holds the record back")
	require.True(t, hint.Equal(rows["hinted"].DueAt), "due at the hint: %s, want %s", rows["hinted"].DueAt, hint)
	require.Equal(t, store.StatusParked, rows["again"].Status)
	require.Equal(t, store.ReasonExhausted, rows["again"].Reason)
	require.Equal(t, "java.lang.IllegalStateException", rows["again"].ErrorClass, "the newest failure's class")
	require.Equal(t, "newest failure", rows["again"].ErrorMessage)

	out := map[string]headers.Envelope{}
	for _, m := range readAll(t, orders) {
		out[string(m.Key)] = headers.DecodeOf(m.Headers).Envelope
	}
	require.Len(t, out, 2)
	require.True(t, deadLettered.Equal(out["first"].FirstFailure), "first failure %s, want the first dead-lettering %s", out["first"].FirstFailure, deadLettered)
	require.Equal(t, 2, out["warned"].RetryCount)

	require.Equal(t, 1.0, metrictest.Sum(t, reg, "dlq_worker_header_warnings_total", map[string]string{"route": rc.Name, "kind": "duplicate_key"}))
	require.Equal(t, 1.0, metrictest.Sum(t, reg, "dlq_worker_header_warnings_total", map[string]string{"route": rc.Name, "kind": "partition"}))
	warned := logs.lines(t, "header fields left unknown")
	require.Len(t, warned, 1, "one record warned about")
	require.Equal(t, dlq, warned[0]["topic"])
	require.Equal(t, 0.0, warned[0]["partition"])
	require.Equal(t, 3.0, warned[0]["offset"])
	require.Contains(t, warned[0]["warnings"], "retry_topic-attempts: duplicate key, the last occurrence wins")
	requireConserved(t, st, dlq, rc.Group)
}
