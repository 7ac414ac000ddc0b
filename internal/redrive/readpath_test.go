package redrive

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/kafkaclient"
	"github.com/dlqops/dlq/internal/routes"
	"github.com/dlqops/dlq/internal/testenv"
	"github.com/dlqops/dlq/internal/testenv/kafkatest"
	"github.com/dlqops/dlq/internal/testenv/metrictest"
)

// read_path queue reads through a kafkafast.Queue and redrives through a
// kafkafast.Producer; read_path poll touches neither: the consumer's Poll and the route's
// producer, confluent-kafka-go's public API only. dlq_worker_read_path says which.
func TestReadPathChoosesTheClients(t *testing.T) {
	bootstrap := testenv.KafkaBootstrap(t)
	dlq := kafkatest.CreateTopic(t, bootstrap, 1, nil)
	for _, path := range []string{ReadPathQueue, ReadPathPoll} {
		t.Run(path, func(t *testing.T) {
			rc := routes.Config{Name: "path", Topics: []string{dlq}, Group: testenv.UniqueName("path-")}
			rc.WithDefaults()
			reg := prometheus.NewRegistry()
			e, err := New([]routes.Config{rc}, Options{Log: zerolog.New(zerolog.NewTestWriter(t)), Kafka: kafkaclient.Config{BootstrapServers: bootstrap},
				Registry: reg, ReadPath: path})
			require.NoError(t, err)
			w, err := newWorker(e, rc)
			require.NoError(t, err)
			t.Cleanup(w.closeClients)
			if path == ReadPathQueue {
				require.NotNil(t, w.records)
				require.NotNil(t, w.fast)
				require.Equal(t, w.fast.Events(), w.redriveReports())
			} else {
				require.Nil(t, w.records)
				require.Nil(t, w.fast)
				require.Nil(t, w.redriveReports())
			}
			require.Same(t, w.records, w.parts.records)
			require.Equal(t, []metrictest.Sample{{Labels: map[string]string{"route": "path", "path": path}, Value: 1}},
				metrictest.Samples(t, reg, "dlq_worker_read_path", nil))
		})
	}
	_, err := New(nil, Options{ReadPath: "fetch"})
	require.ErrorContains(t, err, "read path")
}
