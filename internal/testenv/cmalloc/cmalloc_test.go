package cmalloc_test

import (
	"testing"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/testenv/cmalloc"
)

// A librdkafka handle lives in the C heap: building one shows, destroying it gives back.
func TestInUseFollowsTheCHeap(t *testing.T) {
	before := cmalloc.InUse()
	p, err := kafka.NewProducer(&kafka.ConfigMap{"bootstrap.servers": "127.0.0.1:1", "log_level": 0})
	require.NoError(t, err)
	held := cmalloc.InUse()
	p.Close()
	require.Greater(t, held, before, "a producer allocated nothing with malloc")
	require.Less(t, cmalloc.InUse(), held, "a closed producer freed nothing")
}
