package redrive_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/headers"
	"github.com/dlqops/dlq/internal/routes"
	"github.com/dlqops/dlq/internal/store"
	"github.com/dlqops/dlq/internal/store/storetest"
	"github.com/dlqops/dlq/internal/testenv"
	"github.com/dlqops/dlq/internal/testenv/kafkatest"
)

// 200 timeouts whose messages vary in numbers, ids, UUIDs and URL paths' ids, and 100
// parse errors whose messages vary in the character and its position, read from a DLQ by
// the worker and parked or scheduled, are 2 incidents, the larger counting 200.
func TestWorkerStoresTwoIncidentsForTwoCauses(t *testing.T) {
	t.Parallel()
	bs := testenv.KafkaBootstrap(t)
	dlq := kafkatest.CreateTopic(t, bs, 2, nil)
	orders := kafkatest.CreateTopic(t, bs, 1, nil)
	clock := newClock()
	st := storetest.New(t, store.WithClock(clock.Now))
	now := ms(clock.Now())

	const timeouts, parseErrors = 200, 100
	var msgs []*kafka.Message
	deadLetter := func(key, retries, class, message string) *kafka.Message {
		return &kafka.Message{Key: []byte(key), Value: []byte(`{"order":1}`), Headers: []kafka.Header{
			hdr(headers.KeyRetryCount, retries), hdr(headers.KeyOriginalTopic, orders), hdr(headers.KeyLastFailure, now),
			hdr(headers.KeyErrorClass, class), hdr(headers.KeyErrorMessage, message)}}
	}
	for i := range timeouts {
		// Half exhausted (parked), half waiting on their backoff (scheduled).
		retries := strconv.Itoa(1 + 4*(i%2))
		msg := fmt.Sprintf("Timed out after %d ms waiting for order ord-%d from http://payments:8080/v1/charges/%d (request %08x-%04x-4%03x-8%03x-%012x)",
			1000+37*i, 90000+i, 7*i, uint32(i*2654435761), i, i, i, i*40503)
		msgs = append(msgs, deadLetter("t"+strconv.Itoa(i), retries, "org.apache.kafka.common.errors.TimeoutException", msg))
		if i%2 == 0 {
			c := rune('a' + i%26)
			msg := fmt.Sprintf("Unexpected character ('%c' (code %d)): expected a valid value at [Source: (String)\"{\\\"id\\\": %c%d}\"; line: %d, column: %d]",
				c, c, c, i, 1+i%7, 3+i)
			msgs = append(msgs, deadLetter("p"+strconv.Itoa(i), "5", "com.fasterxml.jackson.core.JsonParseException", msg))
		}
	}
	produce(t, dlq, msgs...)

	rc := route(testenv.UniqueName("incidents-"), dlq)
	rc.Backoff = &routes.Backoff{Base: time.Hour, Factor: 1, Cap: time.Hour}
	e := startEngine(t, st, clock, rc)
	require.Eventually(t, func() bool {
		runNow(t, e, rc.Name)
		n, err := st.Count(context.Background(), store.Filter{})
		return err == nil && n == timeouts+parseErrors
	}, 2*time.Minute, 200*time.Millisecond)

	incs, err := st.Incidents(context.Background(), store.Filter{}, store.MaxPageSize)
	require.NoError(t, err)
	require.Len(t, incs, 2, "%+v", incs)
	require.Equal(t, "org.apache.kafka.common.errors.TimeoutException", incs[0].ErrorClass)
	require.Equal(t, "Timed out after <n> ms waiting for order <id> from http://payments:<n>/<id>/charges/<id> (request <uuid>)",
		incs[0].MessageTemplate)
	require.EqualValues(t, timeouts/2, incs[0].Parked)
	require.EqualValues(t, timeouts/2, incs[0].Scheduled)
	require.Equal(t, orders, incs[0].OriginalTopic)
	require.Equal(t, rc.Name, incs[0].Route)
	require.Equal(t, "com.fasterxml.jackson.core.JsonParseException", incs[1].ErrorClass)
	require.EqualValues(t, parseErrors, incs[1].Parked)
	require.Zero(t, incs[1].Scheduled)
	requireConserved(t, st, dlq, rc.Group)
}
