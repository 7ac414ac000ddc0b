package deadletter

import (
	"testing"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/headers"
)

func TestSubscriptionsAddTheGroupsOwnTopics(t *testing.T) {
	require.Equal(t, []string{"orders", "^pay.*", `^orders\.redrive\.svc-a$`},
		subscriptions([]string{"orders", "^pay.*"}, "svc-a", DefaultGroupTopicTemplate, true))
	require.Equal(t, []string{"orders"}, subscriptions([]string{"orders"}, "svc-a", DefaultGroupTopicTemplate, false))
}

func TestAddressedElsewhere(t *testing.T) {
	to := func(vs ...string) *kafka.Message {
		m := &kafka.Message{}
		for _, v := range vs {
			m.Headers = append(m.Headers, kafka.Header{Key: headers.KeyTargetGroup, Value: []byte(v)})
		}
		return m
	}
	require.False(t, addressedElsewhere(to(), "svc-a"), "a record for every group")
	require.False(t, addressedElsewhere(to("svc-a"), "svc-a"))
	require.True(t, addressedElsewhere(to("svc-b"), "svc-a"))
	require.False(t, addressedElsewhere(to(""), "svc-a"), "an empty address counts as absent")
	require.True(t, addressedElsewhere(to("svc-a", "svc-b"), "svc-a"), "the last occurrence wins")
}
