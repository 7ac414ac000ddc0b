package redrive_test

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/store/storetest"
	"github.com/dlqops/dlq/internal/testenv"
	"github.com/dlqops/dlq/internal/testenv/kafkatest"
)

// With log.format json, everything the real dlq-worker writes is a JSON line, librdkafka's
// own lines (of its consumers, producers and admin client) included: no raw "%4|…" text.
// A consumer-only property in kafka.consumer reaches no producer, so librdkafka warns
// about nothing (no CONFWARN); in kafka.extra, as before the split, it still works, and
// the producers' CONFWARN lines are JSON lines too.
func TestWorkerStderrIsJSONWithConsumerProperties(t *testing.T) {
	t.Parallel()
	bs := testenv.KafkaBootstrap(t)
	dlq := kafkatest.CreateTopic(t, bs, 1, nil)
	target := kafkatest.CreateTopic(t, bs, 1, nil)
	_, dbURL := storetest.NewWithURL(t)
	consumerOnly := `{session.timeout.ms: "6000", heartbeat.interval.ms: "1000", fetch.wait.max.ms: "100"}`
	for _, tc := range []struct {
		name, kafka string
		confwarn    bool
	}{
		{"kafka.consumer", "  extra: {client.id: dlq-stderr}\n  consumer: " + consumerOnly + "\n", false},
		{"kafka.extra", "  extra: " + consumerOnly + "\n", true},
	} {
		dir := t.TempDir()
		cfg := filepath.Join(dir, "worker.yaml")
		require.NoError(t, os.WriteFile(cfg, []byte(`log: {level: info, format: json}
http: {listen: "127.0.0.1:0"}
database: {url: "`+dbURL+`"}
kafka:
  bootstrap_servers: "`+bs+`"
`+tc.kafka+`shutdown_grace: 30s
routes:
  - name: stderr
    topics: [`+dlq+`]
    schedule: "@every 1s"
    backoff: none
`), 0o600))
		logPath := filepath.Join(dir, "worker.log")
		// A record to redrive, so that the worker's consumer and producer both work.
		produce(t, dlq, &kafka.Message{Value: []byte(tc.name), Headers: []kafka.Header{hdr("originalTopic", target)}})
		w := startWorker(t, cfg, logPath)
		if !assert.Eventually(t, func() bool {
			b, _ := os.ReadFile(logPath)
			return strings.Contains(string(b), `"message":"run finished"`)
		}, 2*time.Minute, 100*time.Millisecond, "%s: no run finished", tc.name) {
			b, _ := os.ReadFile(logPath)
			t.Fatalf("log:\n%s", b[max(0, len(b)-4000):])
		}
		// The readiness check asks the admin client for metadata.
		out, err := os.ReadFile(logPath)
		require.NoError(t, err)
		addr := regexp.MustCompile(`"addr":"([^"]+)"`).FindSubmatch(out)
		require.NotNil(t, addr, "the ops server's address")
		resp, err := http.Get("http://" + string(addr[1]) + "/readyz")
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode, tc.name)
		require.NoError(t, w.Term(workerGrace), tc.name)

		out, err = os.ReadFile(logPath)
		require.NoError(t, err)
		confwarn := 0
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			var m map[string]any
			require.NoError(t, json.Unmarshal([]byte(line), &m), "%s: a line that is not JSON: %s", tc.name, line)
			if m["tag"] == "CONFWARN" {
				confwarn++
			}
		}
		if tc.confwarn {
			require.Positive(t, confwarn, "%s: librdkafka's warnings about consumer properties given to producers, as JSON lines", tc.name)
		} else {
			require.Zero(t, confwarn, "%s: no consumer property reaches a producer", tc.name)
		}
	}
}
