package redrive_test

import (
	"bytes"
	"context"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/headers"
	"github.com/dlqops/dlq/internal/kafkaclient"
	"github.com/dlqops/dlq/internal/redrive"
	"github.com/dlqops/dlq/internal/routes"
	"github.com/dlqops/dlq/internal/store"
	"github.com/dlqops/dlq/internal/store/storetest"
	"github.com/dlqops/dlq/internal/testenv"
	"github.com/dlqops/dlq/internal/testenv/kafkatest"
	"github.com/dlqops/dlq/internal/testenv/metrictest"
)

// Kafka's own dead letters, written by real Kafka clients (stack/java): a share consumer
// that rejects poison records (the broker writes them to the group's DLQ, KIP-1191) and a
// Kafka Streams application whose handler dead-letters them (KIP-1034).

// sourceRecord is a record produced to a source topic, poison when its key says so.
func sourceRecord(topic string, partition int32, key string, value []byte, ts time.Time, hs ...kafka.Header) *kafka.Message {
	return &kafka.Message{TopicPartition: kafka.TopicPartition{Topic: &topic, Partition: partition},
		Key: []byte(key), Value: value, Timestamp: ts, Headers: hs}
}

// waitRecords waits until topic holds n records, showing the producer's log if it never does.
func waitRecords(t *testing.T, topic string, n int64, javaLog string) {
	t.Helper()
	a := kafkatest.Admin(t, testenv.KafkaBootstrap(t))
	c, err := kafka.NewConsumer(&kafka.ConfigMap{"bootstrap.servers": testenv.KafkaBootstrap(t), "group.id": testenv.UniqueName("count-")})
	require.NoError(t, err)
	defer c.Close()
	var got int64
	for deadline := time.Now().Add(5 * time.Minute); time.Now().Before(deadline); time.Sleep(500 * time.Millisecond) {
		md, err := a.GetMetadata(&topic, false, 10000)
		require.NoError(t, err)
		got = 0
		for _, p := range md.Topics[topic].Partitions {
			low, high, err := c.QueryWatermarkOffsets(topic, p.ID, 10000)
			require.NoError(t, err)
			got += high - low
		}
		if got >= n {
			require.Equal(t, n, got, "more dead letters than poison records")
			return
		}
	}
	out, _ := os.ReadFile(javaLog)
	t.Fatalf("%s holds %d records, want %d; producer's output:\n%s", topic, got, n, out)
}

// skipBeforeKafka44 skips a share-group dead-letter test on a broker older than Kafka 4.4
// (a shared stack started before the switch to 4.4 runs on until it is restarted): such
// a broker has no share-group dead-letter topic configuration.
func skipBeforeKafka44(t *testing.T) {
	t.Helper()
	a := kafkatest.Admin(t, testenv.KafkaBootstrap(t))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := a.DescribeCluster(ctx)
	require.NoError(t, err)
	require.NotEmpty(t, cl.Nodes)
	res, err := a.DescribeConfigs(ctx, []kafka.ConfigResource{{Type: kafka.ResourceBroker, Name: strconv.Itoa(cl.Nodes[0].ID)}})
	require.NoError(t, err)
	if _, ok := res[0].Config["errors.deadletterqueue.topic.name.prefix"]; !ok {
		t.Skip("the broker is older than Kafka 4.4: no share-group dead-letter topics; restart it with scripts/stack.sh to run this test")
	}
}

// withoutOurs is hs without our canonical headers: what a redriven record must carry of
// its source's.
func withoutOurs(hs []kafka.Header) []kafka.Header {
	var out []kafka.Header
	for _, h := range hs {
		if len(h.Key) < 4 || h.Key[:4] != "dlq-" {
			out = append(out, h)
		}
	}
	return out
}

func keys(hs []kafka.Header) []string {
	var out []string
	for _, h := range hs {
		out = append(out, h.Key)
	}
	return out
}

// requireRedrivenAsSource checks that every source record named in want came back to the
// source topic exactly once, redriven: same key, value, timestamp and headers (ours
// added), retry count 1.
func requireRedrivenAsSource(t *testing.T, source string, want []*kafka.Message) {
	t.Helper()
	var redriven []*kafka.Message
	for _, m := range readAll(t, source) {
		for _, h := range m.Headers {
			if h.Key == headers.KeyRedriveID {
				redriven = append(redriven, m)
			}
		}
	}
	require.Len(t, redriven, len(want))
	for _, w := range want {
		var got *kafka.Message
		for _, m := range redriven {
			if bytes.Equal(m.Key, w.Key) {
				require.Nil(t, got, "%s redriven twice", w.Key)
				got = m
			}
		}
		require.NotNil(t, got, "%s not redriven", w.Key)
		require.Equal(t, w.Value, got.Value, "%s: value", w.Key)
		require.Equal(t, w.Value == nil, got.Value == nil, "%s: null stays null", w.Key)
		require.Equal(t, w.Timestamp.UnixMilli(), got.Timestamp.UnixMilli(), "%s: timestamp", w.Key)
		require.Equal(t, withoutOurs(w.Headers), withoutOurs(got.Headers), "%s: headers", w.Key)
		require.Equal(t, w.TopicPartition.Partition, got.TopicPartition.Partition, "%s: partition", w.Key)
		d := headers.DecodeOf(got.Headers)
		require.Nil(t, d.Problem)
		require.Equal(t, 1, d.Envelope.RetryCount, "%s", w.Key)
		require.Equal(t, source, d.Envelope.OriginalTopic)
	}
}

// A share group rejects poison records and the broker dead-letters them, as pointers
// (the default) or with a copy of key and value. The worker redrives each from its source
// record, byte for byte, headers included (a copy has none), also the one whose copy the
// broker dropped for its size; a tombstone stays a tombstone; our retry count, carried by a record redriven before, still stops it at
// max_retries; a pointer whose source record was deleted is parked source_unavailable with
// its coordinates. Every dead letter is accounted for.
func TestShareGroupDeadLetters(t *testing.T) {
	t.Parallel()
	skipBeforeKafka44(t)
	for _, copyRecord := range []bool{false, true} {
		t.Run("copy="+strconv.FormatBool(copyRecord), func(t *testing.T) {
			t.Parallel()
			bs := testenv.KafkaBootstrap(t)
			source := kafkatest.CreateTopic(t, bs, 2, nil)
			dlq := kafkatest.CreateNamedTopic(t, bs, "dlq."+testenv.UniqueName("share-"), 2,
				map[string]string{"errors.deadletterqueue.group.enable": "true", "max.message.bytes": "4000"})
			ts := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
			trace := []kafka.Header{hdr("traceparent", "00-abc-01"), {Key: "bin", Value: []byte{0, 0xff}}, {Key: "null"}}
			gone := sourceRecord(source, 0, "poison-gone", []byte("deleted before the worker runs"), ts)
			exhausted := sourceRecord(source, 0, "poison-exhausted", []byte("redriven 5 times already"), ts,
				hdr(headers.KeyRetryCount, "5"), hdr(headers.KeyOriginalTopic, source), hdr("traceparent", "00-def-01"))
			back := []*kafka.Message{
				sourceRecord(source, 0, "poison-a", []byte("a"), ts, trace...),
				sourceRecord(source, 0, "poison-tomb", nil, ts.Add(time.Millisecond), trace[0]),
				sourceRecord(source, 1, "poison-b", bytes.Repeat([]byte{0xfe}, 1000), ts),
				sourceRecord(source, 1, "poison-c", []byte{}, ts, trace[1:]...),
				// Too large for the DLQ topic: a copy of it is dropped by the broker.
				sourceRecord(source, 1, "poison-big", bytes.Repeat([]byte("x"), 8000), ts),
			}
			msgs := []*kafka.Message{gone, sourceRecord(source, 0, "ok-1", []byte("fine"), ts), back[0], back[1], exhausted,
				sourceRecord(source, 1, "ok-2", []byte("fine"), ts), back[2], back[3], back[4]}
			produce(t, source, msgs...)

			group := testenv.UniqueName("share-group-")
			log := kafkatest.StartJava(t, "dev.dlq.producers.ShareRejector", bs, source, group, dlq, strconv.FormatBool(copyRecord))
			waitRecords(t, dlq, 7, log)
			for _, m := range readAll(t, dlq) {
				d := headers.DecodeOf(m.Headers)
				require.Nil(t, d.Problem)
				require.Equal(t, headers.ConventionShareGroup, d.Envelope.Convention)
				require.Equal(t, source, d.Envelope.OriginalTopic)
				require.Equal(t, group, d.Envelope.ShareGroup)
				require.Equal(t, 1, d.Envelope.DeliveryCount, "a rejected record was delivered once")
				require.Equal(t, "Offset rejected by client.", d.Envelope.ErrorMessage)
				require.Equal(t, []string{"__dlq.errors.topic", "__dlq.errors.partition", "__dlq.errors.offset",
					"__dlq.errors.group", "__dlq.errors.delivery.count", "__dlq.errors.message"}, keys(m.Headers), "no source header is copied")
				if !copyRecord || d.Envelope.OriginalPartition == 1 && d.Envelope.OriginalOffset == 3 {
					require.Nil(t, m.Key, "a pointer, or a copy dropped for its size")
					require.Nil(t, m.Value)
				} else {
					require.NotNil(t, m.Key, "a copy")
				}
			}
			// The share consumer is done: delete the first poison record from its source.
			kafkatest.DeleteRecords(t, bs, source, kafkatest.Offsets{0: 1})

			st := storetest.New(t)
			reg := prometheus.NewRegistry()
			rc := route(testenv.UniqueName("share-"), dlq)
			rc.Backoff = &routes.Backoff{None: true}
			e := startEngineWith(t, redrive.Options{Clock: time.Now, Store: st, Kafka: kcfg(t), Registry: reg}, rc)
			require.Eventually(t, func() bool {
				runNow(t, e, rc.Name)
				n, err := st.Count(context.Background(), store.Filter{})
				return err == nil && n == 2 && metrictest.Sum(t, reg, "dlq_worker_redriven_total", nil) == 5
			}, 2*time.Minute, 200*time.Millisecond)

			requireRedrivenAsSource(t, source, back)
			records, err := st.ListAfter(context.Background(), store.Filter{}, 0, 10)
			require.NoError(t, err)
			byReason := map[store.Reason]store.Record{}
			for _, r := range records {
				byReason[r.Reason] = r
			}
			unavailable := byReason[redrive.ReasonSourceUnavailable]
			require.Equal(t, []any{source, int32(0), int64(0)}, []any{unavailable.Origin.Topic, unavailable.Origin.Partition, unavailable.Origin.Offset},
				"the pointer's coordinates are kept")
			require.Equal(t, dlq, unavailable.DLQ.Topic)
			require.Contains(t, unavailable.ErrorMessage, "below the log start")
			require.Contains(t, unavailable.ErrorMessage, "Offset rejected by client. (share group "+group+", delivery count 1)",
				"the group and the delivery count, as on the group's other rows")
			if copyRecord {
				require.Equal(t, gone.Value, unavailable.Value, "the group's copy is kept")
			} else {
				require.Nil(t, unavailable.Value)
			}
			spent := byReason[store.ReasonExhausted]
			require.Equal(t, exhausted.Key, spent.Key, "parked with its source record")
			require.Equal(t, exhausted.Value, spent.Value)
			require.Equal(t, 5, spent.RetryCount, "our retry count travels in the source's headers")
			require.Equal(t, int64(4), spent.Origin.Offset)
			require.Equal(t, "Offset rejected by client. (share group "+group+", delivery count 1)", spent.ErrorMessage)
			require.Equal(t, 1.0, metrictest.Sum(t, reg, "dlq_worker_parked_total", map[string]string{"reason": "source_unavailable"}))
			// The headroom gauge is TestSourceHeadroomFollowsTheOldestPointer's: here the
			// share consumer keeps rejecting the redriven records, so new pointers wait.
			requireConserved(t, st, dlq, rc.Group)
		})
	}
}

// A Kafka Streams application dead-letters the records its processor refuses, with the
// source's key, value, timestamp and headers and six headers of its own; the worker
// redrives each to its source topic as it was (Streams' headers dropped, ours added).
func TestStreamsDeadLetters(t *testing.T) {
	t.Parallel()
	bs := testenv.KafkaBootstrap(t)
	source := kafkatest.CreateTopic(t, bs, 2, nil)
	sink := kafkatest.CreateTopic(t, bs, 2, nil)
	dlq := kafkatest.CreateTopic(t, bs, 1, nil)
	ts := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	back := []*kafka.Message{
		sourceRecord(source, 0, "poison-a", []byte("a"), ts, hdr("traceparent", "00-abc-01"), kafka.Header{Key: "bin", Value: []byte{0, 0xff}}),
		sourceRecord(source, 1, "poison-tomb", nil, ts, kafka.Header{Key: "null"}),
		sourceRecord(source, 1, "poison-b", []byte{}, ts.Add(time.Millisecond)),
	}
	produce(t, source, sourceRecord(source, 0, "ok-1", []byte("fine"), ts), back[0], back[1],
		sourceRecord(source, 1, "ok-2", []byte("fine"), ts), back[2])

	log := kafkatest.StartJava(t, "dev.dlq.producers.StreamsDeadLetters", bs, testenv.UniqueName("streams-"), source, sink, dlq)
	waitRecords(t, dlq, 3, log)
	for _, m := range readAll(t, dlq) {
		d := headers.DecodeOf(m.Headers)
		require.Equal(t, "streams", d.Envelope.Convention)
		require.Equal(t, "java.lang.IllegalStateException", d.Envelope.ErrorClass)
	}

	st := storetest.New(t)
	reg := prometheus.NewRegistry()
	rc := route(testenv.UniqueName("streams-"), dlq)
	rc.Backoff = &routes.Backoff{None: true}
	e := startEngineWith(t, redrive.Options{Clock: time.Now, Store: st, Kafka: kcfg(t), Registry: reg}, rc)
	require.Eventually(t, func() bool {
		runNow(t, e, rc.Name)
		return metrictest.Sum(t, reg, "dlq_worker_redriven_total", nil) == 3
	}, 2*time.Minute, 200*time.Millisecond)

	requireRedrivenAsSource(t, source, back)
	n, err := st.Count(context.Background(), store.Filter{})
	require.NoError(t, err)
	require.Zero(t, n)
	requireConserved(t, st, dlq, rc.Group)
}

// Pointers whose source record does not exist are parked source_unavailable, never
// dropped and never redriven as the empty record they are: a deleted topic, an offset past
// the end of the log, an offset holding a transaction marker, no offset at all.
func TestSharePointerWithoutSourceIsParked(t *testing.T) {
	t.Parallel()
	bs := testenv.KafkaBootstrap(t)
	source := kafkatest.CreateTopic(t, bs, 1, nil)
	txs := kafkatest.CreateTopic(t, bs, 1, nil)
	dlq := kafkatest.CreateTopic(t, bs, 1, nil)
	record := sourceRecord(source, 0, "k", []byte("v"), time.Now().Truncate(time.Millisecond))
	produce(t, source, record)
	p, err := kafka.NewProducer(&kafka.ConfigMap{"bootstrap.servers": bs, "transactional.id": testenv.UniqueName("tx-")})
	require.NoError(t, err)
	defer p.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.NoError(t, p.InitTransactions(ctx))
	require.NoError(t, p.BeginTransaction())
	require.NoError(t, p.Produce(sourceRecord(txs, 0, "k", []byte("v"), time.Now()), nil))
	require.NoError(t, p.CommitTransaction(ctx)) // the record at 0, the commit marker at 1

	pointer := func(topic string, partition, offset string) *kafka.Message {
		hs := []kafka.Header{hdr("__dlq.errors.topic", topic)}
		if partition != "" {
			hs = append(hs, hdr("__dlq.errors.partition", partition), hdr("__dlq.errors.offset", offset))
		}
		return &kafka.Message{Headers: append(hs, hdr("__dlq.errors.group", "g"), hdr("__dlq.errors.delivery.count", "1"),
			hdr("__dlq.errors.message", "Offset rejected by client."))}
	}
	missing := testenv.UniqueName("absent-")
	produce(t, dlq, pointer(source, "0", "0"), pointer(missing, "0", "0"), pointer(source, "0", "99"),
		pointer(txs, "0", "1"), pointer(source, "", ""), pointer(source, "3", "0"))

	st := storetest.New(t)
	reg := prometheus.NewRegistry()
	rc := route(testenv.UniqueName("gone-"), dlq)
	rc.Backoff = &routes.Backoff{None: true}
	e := startEngineWith(t, redrive.Options{Clock: time.Now, Store: st, Kafka: kcfg(t), Registry: reg}, rc)
	require.Eventually(t, func() bool {
		runNow(t, e, rc.Name)
		n, err := st.Count(context.Background(), store.Filter{})
		return err == nil && n == 5 && metrictest.Sum(t, reg, "dlq_worker_redriven_total", nil) == 1
	}, time.Minute, 200*time.Millisecond)

	records, err := st.ListAfter(context.Background(), store.Filter{}, 0, 10)
	require.NoError(t, err)
	why := map[int64]string{}
	for _, r := range records {
		require.Equal(t, redrive.ReasonSourceUnavailable, r.Reason)
		require.Nil(t, r.Value)
		why[r.DLQ.Offset] = r.ErrorMessage
	}
	require.Contains(t, why[1], "topic "+missing+" does not exist")
	require.Contains(t, why[2], "offset 99 is beyond the end of the log")
	require.Contains(t, why[3], "no record at offset 1")
	require.Contains(t, why[4], "names no partition or offset")
	require.Contains(t, why[5], "has no partition 3")
	requireRedrivenAsSource(t, source, []*kafka.Message{record})
	requireConserved(t, st, dlq, rc.Group)
}

// The broker holding a share group's pointers and their source stops for 30 s while the
// worker resolves them: fetching a source record fails and stalls its partition instead
// of parking it, the run resumes by itself, and every pointer is redriven from its
// source; nothing is lost.
func TestSharePointersThroughABrokerOutage(t *testing.T) {
	t.Parallel()
	const n = 3000
	b := kafkatest.StartBroker(t)
	bs := b.Bootstrap()
	// The outage and the broker's restart stay within the group session, as in
	// TestBrokerOutageMidRun: a longer one is a rebalance.
	kc := kafkaclient.Config{BootstrapServers: bs, Extra: map[string]string{"message.timeout.ms": strconv.Itoa(int(deliveryTimeout / time.Millisecond)),
		"session.timeout.ms": outageSession}}
	source := kafkatest.CreateTopic(t, bs, 2, nil)
	dlq := kafkatest.CreateTopic(t, bs, 2, nil)
	records := make([]*kafka.Message, n)
	pointers := make([]*kafka.Message, n)
	for i := range records {
		part := int32(i % 2)
		// Large enough that the fetcher cannot read a partition ahead before the outage.
		value := append([]byte("v"+strconv.Itoa(i)+"-"), bytes.Repeat([]byte{'x'}, 8<<10)...)
		records[i] = sourceRecord(source, part, "k"+strconv.Itoa(i), value, time.Now(), hdr("traceparent", strconv.Itoa(i)))
		pointers[i] = sharePointer(part, source, part, int64(i/2))
	}
	produceTo(t, bs, source, records...)
	produceTo(t, bs, dlq, pointers...)

	st := storetest.New(t)
	reg := prometheus.NewRegistry()
	rc := route(testenv.UniqueName("share-outage-"), dlq)
	rc.Backoff = &routes.Backoff{None: true}
	rc.RateLimit = 300
	e := startEngineWith(t, redrive.Options{Store: st, Kafka: kc, Registry: reg}, rc)
	waitAssigned(t, bs, rc.Group, 1, 2)
	run := runInBackground(e, rc.Name)
	sourceEnd := watermarks(t, bs, source)
	require.Eventually(t, func() bool { return kafkatest.Total(sourceEnd()) >= n+n/10 }, 2*time.Minute, 50*time.Millisecond)

	stalls := func() float64 {
		return metrictest.Sum(t, reg, "dlq_worker_errors_total", map[string]string{"kind": "source_fetch"}) +
			metrictest.Sum(t, reg, "dlq_worker_errors_total", map[string]string{"kind": "metadata"})
	}
	before := stalls()
	down := time.Now()
	b.Stop()
	waitOutage(down, outage)
	b.Start()
	requireResumed(t, run, "the broker's return")
	require.Greater(t, stalls(), before, "no source fetch failed during the outage: the stall went untested")
	parked, err := st.Count(context.Background(), store.Filter{})
	require.NoError(t, err)
	require.Zero(t, parked, "a pointer whose source merely did not answer was parked")
	rep := requireConservedOn(t, kc, st, dlq, rc.Group)
	require.Equal(t, n, rep.Checked)
	require.Equal(t, n, rep.OnTarget)
	t.Logf("%.0f stalls; %s", stalls()-before, rep)
}
