package redrive

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/headers"
	"github.com/dlqops/dlq/internal/kafkaclient"
	"github.com/dlqops/dlq/internal/routes"
	"github.com/dlqops/dlq/internal/store/storetest"
	"github.com/dlqops/dlq/internal/testenv"
	"github.com/dlqops/dlq/internal/testenv/kafkatest"
	"github.com/dlqops/dlq/internal/testenv/metrictest"
)

const kickMessage = "partition handed out nothing while the run reads it; kicked it (resumed, and sought when its next offset is known)"

// A partition that librdkafka stops fetching once the run resumed it (a resume lost to a
// race with the assignment's pause, librdkafka#5591; here a pause behind the worker's
// back) is kicked after fetchStallAfter, so the run reads it to its high watermark
// instead of waiting for it forever; the kick is counted and logged at WARN with its
// topic and partition. A new group's partition, where nothing says yet which offset comes
// next, is resumed where the group starts.
func TestRunKicksAPartitionLibrdkafkaStoppedFetching(t *testing.T) {
	const n = 2000
	s := newStallScene(t, n, -1)
	kick := s.runPausedBehindItsBack(t)
	require.Equal(t, false, kick["sought"])
	require.NotContains(t, kick, "offset")
	require.Equal(t, int64(n), s.targetHigh(t), "every record redriven, once")
}

// Where the run knows the next offset (the group's committed offset, checked against the
// ledger at assignment), the kick also seeks the partition there (the documented
// workaround for a lost assigned offset) and logs it.
func TestRunKickSeeksToTheNextOffsetItExpects(t *testing.T) {
	const n, committed = 2000, 500
	s := newStallScene(t, n, committed)
	kick := s.runPausedBehindItsBack(t)
	require.Equal(t, true, kick["sought"])
	require.EqualValues(t, committed, kick["offset"], "sought to where the run starts")
	require.Equal(t, int64(n-committed), s.targetHigh(t), "the records past the committed offset, once")
}

// Where the assignment left the start to the group (its committed offset could not be
// read then), the kick does not seek to a guess: it sought to the log start, reading again
// every record the group had done (and a record below one already taken crashed the
// worker: "tracker: offset 0 added after 642").
func TestRunKickWithoutAKnownOffsetDoesNotReadTheGroupsRecordsAgain(t *testing.T) {
	const n, committed = 2000, 500
	s := newStallScene(t, n, committed)
	p := s.w.parts.byKey[partKey{s.dlq, 0}]
	p.trk, p.stored = nil, -1 // as when the committed offsets could not be read at assignment
	kick := s.runPausedBehindItsBack(t)
	require.Equal(t, int64(n-committed), s.targetHigh(t), "the records past the committed offset, once")
	require.Equal(t, false, kick["sought"])
}

// stallScene is a worker assigned the one partition of a DLQ of n records, which its
// group committed at committed (none when negative).
type stallScene struct {
	w           *worker
	kc          kafkaclient.Config
	dlq, target string
	rc          routes.Config
	logged      *bytes.Buffer
	tps         []kafka.TopicPartition
}

func newStallScene(t *testing.T, n int, committed int64) *stallScene {
	t.Helper()
	bootstrap := testenv.KafkaBootstrap(t)
	s := &stallScene{kc: kafkaclient.Config{BootstrapServers: bootstrap}, dlq: kafkatest.CreateTopic(t, bootstrap, 1, nil),
		target: kafkatest.CreateTopic(t, bootstrap, 1, nil), logged: &bytes.Buffer{}}
	s.addRecords(t, n)
	s.rc = routes.Config{Name: "stall", Topics: []string{s.dlq}, Group: testenv.UniqueName("stall-"), Backoff: &routes.Backoff{None: true}}
	if committed >= 0 {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		res, err := kafkatest.Admin(t, bootstrap).AlterConsumerGroupOffsets(ctx, []kafka.ConsumerGroupTopicPartitions{{Group: s.rc.Group,
			Partitions: []kafka.TopicPartition{{Topic: &s.dlq, Partition: 0, Offset: kafka.Offset(committed)}}}})
		require.NoError(t, err)
		require.NoError(t, res.ConsumerGroupsTopicPartitions[0].Partitions[0].Error)
	}
	s.w = testWorker(t, s.rc, s.kc, storetest.New(t))
	ctx, cancel := context.WithCancel(context.Background())
	for _, svc := range []interface {
		Start(context.Context) error
		Stop(context.Context) error
	}{s.w.park, s.w.ledger, s.w.send} { // as the loop does
		require.NoError(t, svc.Start(ctx))
		t.Cleanup(func() { _ = svc.Stop(context.Background()) })
	}
	t.Cleanup(cancel)
	s.w.log = zerolog.New(io.MultiWriter(s.logged, zerolog.NewTestWriter(t)))
	s.w.walk.log, s.w.runner.log = s.w.log, s.w.log // the loop's parts log as the worker does
	s.tps = []kafka.TopicPartition{{Topic: &s.dlq, Partition: 0, Offset: kafka.OffsetStored}}
	s.w.assign(s.tps)
	return s
}

// addRecords writes n due dead letters of s.target to the DLQ and waits until the broker
// has each.
func (s *stallScene) addRecords(t *testing.T, n int) {
	t.Helper()
	prod := testProducer(t, s.kc)
	hdrs := headers.To[kafka.Header](headers.Encode(nil, headers.Envelope{RetryCount: 1, OriginalTopic: s.target,
		OriginalPartition: 0, OriginalOffset: -1}, headers.DefaultEncodeOptions()))
	for range n {
		require.NoError(t, prod.Produce(&kafka.Message{TopicPartition: kafka.TopicPartition{Topic: &s.dlq, Partition: 0},
			Value: []byte("v"), Headers: hdrs}, nil))
	}
	for acked := 0; acked < n; {
		if m, ok := (<-prod.Events()).(*kafka.Message); ok {
			require.NoError(t, m.TopicPartition.Error)
			acked++
		}
	}
}

// runPausedBehindItsBack starts a run, pauses the partition in librdkafka behind the
// worker's back, steps the loop until the run ends, and returns the one kick's log line.
func (s *stallScene) runPausedBehindItsBack(t *testing.T) map[string]any {
	t.Helper()
	ctx := context.Background()
	reply := make(chan error, 1)
	s.w.runner.startRun(ctx, reply)
	require.NotNil(t, s.w.run, "the run started")
	require.NoError(t, s.w.consumer.Pause(s.tps)) // librdkafka no longer fetches what the run resumed
	deadline := time.Now().Add(fetchStallAfter + time.Minute)
	var err error
	for done := false; !done; {
		select {
		case err = <-reply:
			done = true
		default:
			require.True(t, time.Now().Before(deadline), "the run never ended: %d records redriven", s.w.parts.byKey[partKey{s.dlq, 0}].counts.redriven)
			s.w.step(ctx)
		}
	}
	require.NoError(t, err)
	reg := prometheus.NewRegistry()
	reg.MustRegister(s.w.metrics.errors)
	require.Equal(t, 1.0, metrictest.Sum(t, reg, "dlq_worker_errors_total", map[string]string{"route": s.rc.Name, "kind": "fetch_stall"}), "kicks counted")
	var kicks []map[string]any
	for _, line := range bytes.Split(bytes.TrimSpace(s.logged.Bytes()), []byte("\n")) {
		var l map[string]any
		require.NoError(t, json.Unmarshal(line, &l))
		if l["message"] == kickMessage {
			kicks = append(kicks, l)
		}
	}
	require.Len(t, kicks, 1, "kicks logged")
	require.Equal(t, "warn", kicks[0]["level"])
	require.Equal(t, s.dlq, kicks[0]["topic"])
	require.EqualValues(t, 0, kicks[0]["partition"])
	return kicks[0]
}

// targetHigh is the target's high watermark: how many records were redriven.
func (s *stallScene) targetHigh(t *testing.T) int64 {
	t.Helper()
	_, high, err := s.w.consumer.QueryWatermarkOffsets(s.target, 0, int(callTimeout/time.Millisecond))
	require.NoError(t, err)
	return high
}
