package delivery

import (
	"testing"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/kafkaclient"
	"github.com/dlqops/dlq/internal/testenv"
	"github.com/dlqops/dlq/internal/testenv/kafkatest"
)

// A delivery report carries where the record went and its opaque, never a copy of its
// key, value or headers: nobody reads them, and copying a 1 KiB value back into Go for
// every acknowledgement was CPU spent per record.
func TestProducerReportsCarryNoContent(t *testing.T) {
	bootstrap := testenv.KafkaBootstrap(t)
	topic := kafkatest.CreateTopic(t, bootstrap, 1, nil)
	cm := ProducerConfig(kafkaclient.Config{BootstrapServers: bootstrap})
	p, err := kafka.NewProducer(&cm)
	require.NoError(t, err)
	defer p.Close()
	reports := make(chan kafka.Event, 1)
	require.NoError(t, p.Produce(&kafka.Message{TopicPartition: kafka.TopicPartition{Topic: &topic, Partition: 0},
		Key: []byte("key"), Value: []byte("value"), Headers: []kafka.Header{{Key: "h", Value: []byte("v")}},
		Opaque: 7}, reports))
	m := (<-reports).(*kafka.Message)
	require.NoError(t, m.TopicPartition.Error)
	require.Equal(t, topic, *m.TopicPartition.Topic)
	require.Equal(t, kafka.Offset(0), m.TopicPartition.Offset)
	require.Equal(t, 7, m.Opaque)
	require.Nil(t, m.Key)
	require.Nil(t, m.Value)
	require.Empty(t, m.Headers)
}
