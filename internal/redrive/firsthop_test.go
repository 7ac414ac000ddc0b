package redrive_test

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/headers"
	"github.com/dlqops/dlq/internal/redrive"
	"github.com/dlqops/dlq/internal/routes"
	"github.com/dlqops/dlq/internal/store/storetest"
	"github.com/dlqops/dlq/internal/testenv"
	"github.com/dlqops/dlq/internal/testenv/kafkatest"
	"github.com/dlqops/dlq/internal/testenv/metrictest"
)

// A share group rejects a record, the worker redrives it, the group rejects the redriven
// copy, and the worker redrives that. Both hops carry the envelope rule every convention
// follows: the first hop's coordinates and timestamp (the original failure, not the
// latest copy's offset), the first failure at the first dead letter, and the last failure
// at the time of the dead letter each hop retries (not the redrive's).
func TestShareGroupRedrivesKeepTheFirstHop(t *testing.T) {
	t.Parallel()
	skipBeforeKafka44(t)
	bs := testenv.KafkaBootstrap(t)
	source := kafkatest.CreateTopic(t, bs, 1, nil)
	dlq := kafkatest.CreateNamedTopic(t, bs, "dlq."+testenv.UniqueName("share-"), 1,
		map[string]string{"errors.deadletterqueue.group.enable": "true"})
	ts := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	produce(t, source, sourceRecord(source, 0, "poison-a", []byte("a"), ts, hdr("traceparent", "00-abc-01")))
	log := kafkatest.StartJava(t, "dev.dlq.producers.ShareRejector", bs, source, testenv.UniqueName("share-group-"), dlq, "false")
	waitRecords(t, dlq, 1, log)

	st := storetest.New(t)
	reg := prometheus.NewRegistry()
	rc := route(testenv.UniqueName("first-hop-"), dlq)
	rc.Backoff = &routes.Backoff{None: true}
	e := startEngineWith(t, redrive.Options{Clock: time.Now, Store: st, Kafka: kcfg(t), Registry: reg}, rc)
	for hop := 1; hop <= 2; hop++ {
		waitRecords(t, dlq, int64(hop), log)
		require.Eventually(t, func() bool {
			runNow(t, e, rc.Name)
			return metrictest.Sum(t, reg, "dlq_worker_redriven_total", nil) == float64(hop)
		}, 2*time.Minute, 200*time.Millisecond, "hop %d", hop)
	}

	deadLetters := readAll(t, dlq)[:2]
	hops := readAll(t, source)
	require.GreaterOrEqual(t, len(hops), 3, "the record and its two redrives")
	for i, m := range hops[1:3] {
		env := headers.DecodeOf(m.Headers).Envelope
		require.Equal(t, i+1, env.RetryCount)
		require.Equal(t, []any{source, int32(0), int64(0)}, []any{env.OriginalTopic, env.OriginalPartition, env.OriginalOffset},
			"hop %d: the first hop's coordinates", i+1)
		require.Equal(t, ts.UnixMilli(), env.OriginalTimestamp.UnixMilli(), "hop %d", i+1)
		require.Equal(t, deadLetters[0].Timestamp.UnixMilli(), env.FirstFailure.UnixMilli(), "hop %d: the first dead letter's time", i+1)
		require.Equal(t, deadLetters[i].Timestamp.UnixMilli(), env.LastFailure.UnixMilli(), "hop %d: the time of the dead letter it retries", i+1)
		require.Equal(t, &headers.Coordinates{Topic: dlq, Partition: 0, Offset: int64(i)}, env.RedriveID)
		require.Equal(t, ts.UnixMilli(), m.Timestamp.UnixMilli(), "hop %d: the source's timestamp", i+1)
		require.Equal(t, "traceparent", m.Headers[0].Key, "hop %d: the source's headers", i+1)
		require.Equal(t, "poison-a", string(m.Key))
	}
	requireConserved(t, st, dlq, rc.Group)
}
