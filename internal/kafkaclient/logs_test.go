package kafkaclient_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/kafkaclient"
	"github.com/dlqops/dlq/internal/testenv"
)

// librdkafka's own lines (here: a refused connection) come out as zerolog JSON lines with
// the client, the tag and a level, not as raw "%3|…|FAIL|…" lines on stderr.
func TestLogRouterForwardsLibrdkafkaLines(t *testing.T) {
	ctx := context.Background()
	logs := &testenv.SyncBuffer{}
	r := kafkaclient.NewLogRouter(zerolog.New(logs))
	require.NoError(t, r.Stop(ctx), "before Start")
	require.NoError(t, r.Start(ctx))
	require.Error(t, kafkaclient.NewLogRouter(zerolog.Nop()).Start(ctx), "one router per process")
	cm := kafkaclient.ProducerConfig(kafkaclient.Config{BootstrapServers: "127.0.0.1:1"}) // nothing listens
	require.Equal(t, true, cm["go.logs.channel.enable"])
	p, err := kafka.NewProducer(&cm)
	require.NoError(t, err)
	cc := kafkaclient.ConsumerConfig(kafkaclient.Config{BootstrapServers: "127.0.0.1:1"}, "g")
	c, err := kafka.NewConsumer(&cc)
	require.NoError(t, err)
	defer c.Close()
	a, err := kafkaclient.NewAdmin(kafkaclient.Config{BootstrapServers: "127.0.0.1:1"})
	require.NoError(t, err)
	a.Close()

	var line map[string]any
	require.Eventually(t, func() bool {
		for _, l := range strings.Split(logs.String(), "\n") {
			var m map[string]any
			if json.Unmarshal([]byte(l), &m) == nil && m["tag"] == "FAIL" {
				line = m
				return true
			}
		}
		return false
	}, 30*time.Second, 50*time.Millisecond)
	p.Close()
	require.NoError(t, r.Stop(ctx))
	require.NoError(t, r.Stop(ctx), "twice")

	require.Equal(t, "librdkafka", line["component"])
	require.Equal(t, "error", line["level"])
	require.Contains(t, line["message"], "127.0.0.1:1")
	require.NotEmpty(t, line["client"])
	require.Equal(t, false, kafkaclient.ProducerConfig(kafkaclient.Config{BootstrapServers: "x"})["go.logs.channel.enable"], "stopped: back to librdkafka's default")
}

// The admin client's own lines go through the router too (confluent-kafka-go's admin
// client takes no log channel; NewAdmin derives it from a producer that does), and the
// properties of the consumers only reach no producer: no CONFWARN line.
func TestAdminLogsGoThroughTheRouter(t *testing.T) {
	ctx := context.Background()
	logs := &testenv.SyncBuffer{}
	r := kafkaclient.NewLogRouter(zerolog.New(logs))
	require.NoError(t, r.Start(ctx))
	defer func() { require.NoError(t, r.Stop(ctx)) }()
	a, err := kafkaclient.NewAdmin(kafkaclient.Config{BootstrapServers: "127.0.0.1:1", // nothing listens
		Consumer: map[string]string{"session.timeout.ms": "6000", "fetch.wait.max.ms": "100"}})
	require.NoError(t, err)
	defer a.Close()
	_, err = a.GetMetadata(nil, false, 500)
	require.Error(t, err)
	require.Eventually(t, func() bool { return strings.Contains(logs.String(), `"tag":"FAIL"`) }, 30*time.Second, 50*time.Millisecond)
	require.NotContains(t, logs.String(), "CONFWARN")
}
