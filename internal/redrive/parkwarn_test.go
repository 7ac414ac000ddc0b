package redrive_test

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/headers"
	"github.com/dlqops/dlq/internal/redrive"
	"github.com/dlqops/dlq/internal/store"
	"github.com/dlqops/dlq/internal/store/storetest"
	"github.com/dlqops/dlq/internal/testenv"
	"github.com/dlqops/dlq/internal/testenv/kafkatest"
)

// A record parked because it is itself wrong (no valid original topic, a malformed retry
// count, too large for its target) gets a warning of its own with its DLQ coordinates and
// reason, rate-limited per reason: two unroutable records in a row give one line. A record
// whose retry count header is empty counts as never retried and is redriven.
func TestRecordsParkedForThemselvesAreLogged(t *testing.T) {
	t.Parallel()
	bs := testenv.KafkaBootstrap(t)
	dlq := kafkatest.CreateTopic(t, bs, 1, nil)
	target := kafkatest.CreateTopic(t, bs, 1, nil)
	small := kafkatest.CreateTopic(t, bs, 1, map[string]string{"max.message.bytes": "2000"})
	clock := newClock()
	st := storetest.New(t, store.WithClock(clock.Now))
	old := ms(clock.Now().Add(-2 * time.Hour))
	produce(t, dlq,
		// 0, 1: no original topic
		&kafka.Message{Key: []byte("k0"), Value: []byte("v0"), Headers: []kafka.Header{hdr("retryCount", "1")}},
		&kafka.Message{Key: []byte("k1"), Value: []byte("v1"), Headers: []kafka.Header{hdr("retryCount", "1")}},
		// 2: garbled retry count
		&kafka.Message{Key: []byte("k2"), Value: []byte("v2"), Headers: []kafka.Header{hdr("retryCount", "many"), hdr("originalTopic", target)}},
		// 3: too large for its target
		&kafka.Message{Key: []byte("k3"), Value: make([]byte, 4000), Headers: []kafka.Header{hdr("retryCount", "1"), hdr("originalTopic", small), hdr(headers.KeyLastFailure, old)}},
		// 4: an empty retry count: never retried, due now
		&kafka.Message{Key: []byte("k4"), Value: []byte("v4"), Headers: []kafka.Header{hdr("retryCount", ""), hdr("originalTopic", target), hdr(headers.KeyLastFailure, old)}},
	)

	var logs testenv.SyncBuffer
	rc := route("parkwarn", dlq)
	e := startEngineLogging(t, &logs, redrive.Options{Clock: clock.Now, Store: st, Kafka: kcfg(t)}, rc)
	require.Eventually(t, func() bool {
		runNow(t, e, "parkwarn")
		n, err := st.Count(context.Background(), store.Filter{})
		return err == nil && n == 4
	}, 60*time.Second, 100*time.Millisecond)

	got := readAll(t, target)
	require.Len(t, got, 1)
	require.Equal(t, "k4", string(got[0].Key), "the record with an empty retry count is redriven")
	page, err := st.List(context.Background(), store.Filter{}, "", 100)
	require.NoError(t, err)
	reasons := map[int64]store.Reason{}
	for _, r := range page.Records {
		reasons[r.DLQ.Offset] = r.Reason
	}
	require.Equal(t, map[int64]store.Reason{0: store.ReasonUnroutable, 1: store.ReasonUnroutable, 2: store.ReasonInvalidRetryCount, 3: store.ReasonTooLarge}, reasons)

	type line struct {
		Level, Message, Topic, Reason, Detail string
		Partition                             *int32
		Offset                                *int64
	}
	byReason := map[string][]line{}
	for _, s := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var l line
		require.NoError(t, json.Unmarshal([]byte(s), &l), s)
		if strings.HasPrefix(l.Message, "record parked ") {
			byReason[l.Reason] = append(byReason[l.Reason], l)
		}
	}
	want := map[string]int64{"unroutable": 0, "invalid_retry_count": 2, "too_large": 3}
	require.Len(t, byReason, len(want), "%v", byReason)
	for reason, off := range want {
		ls := byReason[reason]
		require.Len(t, ls, 1, "%s: one line per interval", reason)
		require.Equal(t, "warn", ls[0].Level)
		require.Equal(t, dlq, ls[0].Topic, reason)
		require.NotNil(t, ls[0].Partition)
		require.Equal(t, int32(0), *ls[0].Partition)
		require.NotNil(t, ls[0].Offset)
		require.Equal(t, off, *ls[0].Offset, reason)
		require.NotEmpty(t, ls[0].Detail, reason)
	}
	require.Contains(t, byReason["invalid_retry_count"][0].Detail, `"many"`)
}

// A dead letter whose original-topic header is not UTF-8 is parked unroutable with the
// header's bytes kept exact: original_topic is their Go-quoted form, never U+FFFD, and the
// stored headers are byte-identical. Nothing is produced anywhere.
func TestOriginalTopicInInvalidUTF8IsParkedExact(t *testing.T) {
	t.Parallel()
	bs := testenv.KafkaBootstrap(t)
	dlq := kafkatest.CreateTopic(t, bs, 1, nil)
	clock := newClock()
	st := storetest.New(t, store.WithClock(clock.Now))
	hs := []kafka.Header{{Key: "retryCount", Value: []byte("1")}, {Key: "originalTopic", Value: []byte("orders\xff\xfe")}}
	produce(t, dlq, &kafka.Message{Key: []byte("k"), Value: []byte("v"), Headers: hs})

	rc := route("badutf8", dlq)
	e := startEngine(t, st, clock, rc)
	require.Eventually(t, func() bool {
		runNow(t, e, "badutf8")
		n, err := st.Count(context.Background(), store.Filter{})
		return err == nil && n == 1
	}, 60*time.Second, 100*time.Millisecond)
	page, err := st.List(context.Background(), store.Filter{}, "", 10)
	require.NoError(t, err)
	require.Len(t, page.Records, 1)
	rec, err := st.Get(context.Background(), page.Records[0].ID)
	require.NoError(t, err)
	require.Equal(t, store.ReasonUnroutable, rec.Reason)
	require.Equal(t, `"orders\xff\xfe"`, rec.Origin.Topic)
	raw, err := strconv.Unquote(rec.Origin.Topic)
	require.NoError(t, err)
	require.Equal(t, "orders\xff\xfe", raw, "the header's bytes, exact")
	require.Equal(t, headers.To[store.Header](hs), rec.Headers, "the headers as they were")
	requireConserved(t, st, dlq, rc.Group)
}
