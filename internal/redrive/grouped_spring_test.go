package redrive_test

import (
	"context"
	"os"
	"strings"
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

// receivedBy are the "received TOPIC KEY" lines of a listener's log.
func receivedBy(t *testing.T, log string) []string {
	t.Helper()
	out, err := os.ReadFile(log)
	require.NoError(t, err)
	var got []string
	for _, line := range strings.Split(string(out), "\n") {
		if rest, ok := strings.CutPrefix(line, "received "); ok {
			got = append(got, rest)
		}
	}
	return got
}

// A real Spring Kafka listener container with the documented one-line change reads its
// group's redrive topic: a dead letter Spring's DeadLetterPublishingRecoverer headers say
// the group failed comes back to that listener on the group's topic, and its
// RecordFilterStrategy discards a record on the source topic addressed to another group.
func TestSpringListenerReadsItsGroupTopic(t *testing.T) {
	t.Parallel()
	bs := testenv.KafkaBootstrap(t)
	orders := kafkatest.CreateTopic(t, bs, 1, nil)
	dlq := kafkatest.CreateTopic(t, bs, 1, nil)
	group := testenv.UniqueName("spring-svc-")
	groupTopic := kafkatest.CreateNamedTopic(t, bs, routes.GroupTopic(routes.DefaultGroupTopicTemplate, orders, group), 1, nil)
	log := kafkatest.StartSpring(t, "dev.dlq.spring.GroupListener", bs, orders, group)

	clock := newClock()
	at := clock.Now().Add(-2 * time.Hour)
	produce(t, orders,
		&kafka.Message{Key: []byte("for-another-group"), Value: []byte("v"), Headers: []kafka.Header{hdr(headers.KeyTargetGroup, "svc-other")}},
		&kafka.Message{Key: []byte("for-this-group"), Value: []byte("v"), Headers: []kafka.Header{hdr(headers.KeyTargetGroup, group)}})
	produce(t, dlq, &kafka.Message{Key: []byte("failed-by-spring"), Value: []byte("v"), Timestamp: at, Headers: []kafka.Header{
		hdr("kafka_dlt-original-topic", orders), {Key: "kafka_dlt-original-partition", Value: []byte{0, 0, 0, 0}},
		hdr("kafka_dlt-original-consumer-group", group), hdr("kafka_dlt-exception-fqcn", "java.lang.IllegalStateException")}})

	st := storetest.New(t, store.WithClock(clock.Now))
	rc := route("spring-group", dlq)
	rc.RedriveTo = routes.RedriveToGroupTopic
	e := startEngine(t, st, clock, rc)
	runNow(t, e, rc.Name)

	want := []string{orders + " for-this-group", groupTopic + " failed-by-spring"}
	require.Eventually(t, func() bool { return len(receivedBy(t, log)) >= len(want) }, 3*time.Minute, 200*time.Millisecond,
		"the Spring listener receives the redrive on its group's topic")
	require.ElementsMatch(t, want, receivedBy(t, log), "and never the record addressed to another group")
	n, err := st.Count(context.Background(), store.Filter{})
	require.NoError(t, err)
	require.Zero(t, n)
	require.Len(t, readAll(t, orders), 2, "the dead letter did not go back to the source topic")
}
