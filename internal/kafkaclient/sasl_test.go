package kafkaclient_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/cmd/dlq-worker/workerconfig"
	"github.com/dlqops/dlq/internal/config"
	"github.com/dlqops/dlq/internal/kafkaclient"
	"github.com/dlqops/dlq/internal/testenv/kafkatest"
)

// saslConfig loads a worker configuration as dlq-worker does, its SASL password in a file
// named by kafka.extra_files (as the Helm chart mounts a Secret), and returns its Kafka part.
func saslConfig(t *testing.T, bootstrap, password string) kafkaclient.Config {
	t.Helper()
	dir := t.TempDir()
	pw := filepath.Join(dir, "password")
	require.NoError(t, os.WriteFile(pw, []byte(password+"\n"), 0o600))
	file := filepath.Join(dir, "worker.yaml")
	require.NoError(t, os.WriteFile(file, []byte("database:\n  url: postgres://unused\n"+
		"kafka:\n  bootstrap_servers: "+bootstrap+"\n"+
		"  extra:\n    security.protocol: SASL_PLAINTEXT\n    sasl.mechanism: PLAIN\n    sasl.username: dlq\n"+
		"  extra_files:\n    sasl.password: "+pw+"\n"+
		"routes:\n  - name: r\n    topics: [t]\n"), 0o600))
	var w workerconfig.Config
	require.NoError(t, config.Load(file, "DLQ_WORKER_", &w))
	return w.Kafka
}

// A SASL password given as a file reaches every handle the worker builds: against a broker
// that requires SASL PLAIN, the admin client creates a topic, the producer delivers and
// the consumer reads the record back. The same configuration with a wrong password in
// the file is refused with an authentication error.
func TestSASLPasswordFromFile(t *testing.T) {
	t.Parallel()
	b := kafkatest.StartSASLBroker(t, "dlq", "pw-from-a-secret")
	k := saslConfig(t, b.Bootstrap(), "pw-from-a-secret")

	admin, err := kafkaclient.NewAdmin(k)
	require.NoError(t, err)
	defer admin.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	topic := "sasl-secret-file"
	res, err := admin.CreateTopics(ctx, []kafka.TopicSpecification{{Topic: topic, NumPartitions: 1, ReplicationFactor: 1}})
	require.NoError(t, err)
	require.Equal(t, kafka.ErrNoError, res[0].Error.Code(), "%v", res[0].Error)

	pc := kafkaclient.ProducerConfig(k)
	p, err := kafka.NewProducer(&pc)
	require.NoError(t, err)
	defer p.Close()
	produceSync(t, p, &kafka.Message{TopicPartition: kafka.TopicPartition{Topic: &topic, Partition: 0}, Value: []byte("v")})

	cc := kafkaclient.ConsumerConfig(k, "sasl-group")
	c, err := kafka.NewConsumer(&cc)
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.Assign([]kafka.TopicPartition{{Topic: &topic, Partition: 0, Offset: kafka.OffsetBeginning}}))
	got, err := c.ReadMessage(time.Minute)
	require.NoError(t, err)
	require.Equal(t, []byte("v"), got.Value)

	wrong := kafkaclient.ProducerConfig(saslConfig(t, b.Bootstrap(), "not-the-password"))
	wp, err := kafka.NewProducer(&wrong)
	require.NoError(t, err)
	defer wp.Close()
	require.NoError(t, wp.Produce(&kafka.Message{TopicPartition: kafka.TopicPartition{Topic: &topic, Partition: 0}, Value: []byte("x")}, nil))
	deadline := time.After(time.Minute)
	for {
		select {
		case ev := <-wp.Events():
			if e, ok := ev.(kafka.Error); ok && e.Code() == kafka.ErrAuthentication {
				return
			}
		case <-deadline:
			t.Fatal("a wrong password in the file is not refused with an authentication error")
		}
	}
}
