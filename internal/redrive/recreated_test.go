package redrive_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/audit"
	"github.com/dlqops/dlq/internal/redrive"
	"github.com/dlqops/dlq/internal/routes"
	"github.com/dlqops/dlq/internal/store"
	"github.com/dlqops/dlq/internal/store/storetest"
	"github.com/dlqops/dlq/internal/testenv"
	"github.com/dlqops/dlq/internal/testenv/kafkatest"
	"github.com/dlqops/dlq/internal/testenv/metrictest"
)

// requireParkedUnredriven runs rc until the DLQ's only dead letter is stored and returns
// its row, checking that the run redrove nothing: source then holds exactly want.
func requireParkedUnredriven(t *testing.T, e *redrive.Engine, st *store.Store, reg *prometheus.Registry, rc routes.Config,
	source string, want *kafka.Message) store.Record {
	t.Helper()
	require.Eventually(t, func() bool {
		runNow(t, e, rc.Name)
		n, err := st.Count(context.Background(), store.Filter{})
		return err == nil && n == 1
	}, 2*time.Minute, 200*time.Millisecond)
	require.Zero(t, metrictest.Sum(t, reg, "dlq_worker_redriven_total", nil), "a record that is not the dead one was redriven")
	out := readAll(t, source)
	require.Len(t, out, 1, "nothing was produced to the source topic")
	require.Equal(t, want.Key, out[0].Key)
	records, err := st.ListAfter(context.Background(), store.Filter{}, 0, 10)
	require.NoError(t, err)
	require.Len(t, records, 1)
	require.Equal(t, redrive.ReasonSourceUnavailable, records[0].Reason)
	require.Equal(t, store.StatusParked, records[0].Status)
	require.Equal(t, 1.0, metrictest.Sum(t, reg, "dlq_worker_parked_total", map[string]string{"reason": "source_unavailable"}))
	return records[0]
}

// A share group rejects a record; its topic is then deleted and re-created, and an
// unrelated, newer record takes offset 0. The dead letter's coordinates now name that
// record: the worker parks the dead letter source_unavailable with the cause, the group
// and the delivery count in its message, and produces nothing (the topic holds only the
// unrelated record), with a pointer and with the group's copy of the rejected record.
func TestShareDeadLetterOfARecreatedTopicIsParked(t *testing.T) {
	t.Parallel()
	skipBeforeKafka44(t)
	for _, copyRecord := range []bool{false, true} {
		t.Run("copy="+strconv.FormatBool(copyRecord), func(t *testing.T) {
			t.Parallel()
			bs := testenv.KafkaBootstrap(t)
			source := kafkatest.CreateTopic(t, bs, 1, nil)
			dlq := kafkatest.CreateNamedTopic(t, bs, "dlq."+testenv.UniqueName("share-"), 1,
				map[string]string{"errors.deadletterqueue.group.enable": "true"})
			rejected := sourceRecord(source, 0, "poison-1", []byte("the record the group rejected"), time.Now())
			produce(t, source, rejected)
			group := testenv.UniqueName("share-group-")
			log := kafkatest.StartJava(t, "dev.dlq.producers.ShareRejector", bs, source, group, dlq, strconv.FormatBool(copyRecord))
			waitRecords(t, dlq, 1, log)

			kafkatest.RecreateTopic(t, bs, source, 1, nil)
			unrelated := sourceRecord(source, 0, "unrelated", []byte("another record, written later"), time.Now())
			produce(t, source, unrelated)

			st := storetest.New(t)
			reg := prometheus.NewRegistry()
			rc := route(testenv.UniqueName("recreated-"), dlq)
			rc.Backoff = &routes.Backoff{None: true}
			e := startEngineWith(t, redrive.Options{Clock: time.Now, Store: st, Kafka: kcfg(t), Registry: reg}, rc)
			row := requireParkedUnredriven(t, e, st, reg, rc, source, unrelated)

			require.Equal(t, []any{source, int32(0), int64(0)}, []any{row.Origin.Topic, row.Origin.Partition, row.Origin.Offset})
			if copyRecord {
				require.Contains(t, row.ErrorMessage, "source unavailable: the record at offset 0 differs from the group's copy of the record it rejected")
				require.Equal(t, rejected.Value, row.Value, "the group's copy is kept")
			} else {
				require.Contains(t, row.ErrorMessage, "source unavailable: the record at offset 0 (timestamp ")
				require.Contains(t, row.ErrorMessage, ") is newer than the dead letter (")
				require.Nil(t, row.Value)
			}
			require.Contains(t, row.ErrorMessage, "Offset rejected by client. (share group "+group+", delivery count 1)",
				"the broker's message, the group and the delivery count, as on every row of a share group")
			requireConserved(t, st, dlq, rc.Group)
		})
	}
}

// resolveFirstPointer starts a worker with one route over dlq and runs it until it has
// redriven the one dead letter dlq holds: the worker has seen the source topic's id.
func resolveFirstPointer(t *testing.T, st *store.Store, name, dlq string) (*redrive.Engine, *prometheus.Registry, routes.Config) {
	t.Helper()
	reg := prometheus.NewRegistry()
	rc := route(testenv.UniqueName(name), dlq)
	rc.Backoff = &routes.Backoff{None: true}
	e := startEngineWith(t, redrive.Options{Clock: time.Now, Store: st, Kafka: kcfg(t), Registry: reg}, rc)
	require.Eventually(t, func() bool {
		runNow(t, e, rc.Name)
		return metrictest.Sum(t, reg, "dlq_worker_redriven_total", nil) == 1
	}, time.Minute, 200*time.Millisecond, "the worker resolves a first dead letter in the source topic")
	return e, reg, rc
}

// The worker resolved a dead letter in a source topic, which is then deleted and
// re-created and filled with an unrelated record carrying an old timestamp (as a mirror
// or a restore writes them), so neither a copy nor the timestamps tell it apart. The
// topic id the broker reports differs from the one the worker saw: a dead letter written
// before the worker saw the new id is parked source_unavailable, naming both ids, and
// nothing is produced.
func TestSharePointerIntoATopicRecreatedSinceIsParked(t *testing.T) {
	t.Parallel()
	bs := testenv.KafkaBootstrap(t)
	source := kafkatest.CreateTopic(t, bs, 1, nil)
	dlq := kafkatest.CreateTopic(t, bs, 1, nil)
	old := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	produce(t, source, sourceRecord(source, 0, "first", []byte("v"), old))
	produce(t, dlq, sharePointer(0, source, 0, 0))

	st := storetest.New(t)
	e, reg, rc := resolveFirstPointer(t, st, "recreated-id-", dlq)
	requireConserved(t, st, dlq, rc.Group)

	written := time.Now() // the group rejects the topic's second record, before the re-creation
	kafkatest.RecreateTopic(t, bs, source, 1, nil)
	unrelated := sourceRecord(source, 0, "unrelated", []byte("restored from elsewhere"), old)
	produce(t, source, unrelated)
	pointer := sharePointer(0, source, 0, 0)
	pointer.Timestamp = written
	produce(t, dlq, pointer)

	require.Eventually(t, func() bool {
		runNow(t, e, rc.Name)
		n, err := st.Count(context.Background(), store.Filter{})
		return err == nil && n == 1
	}, time.Minute, 200*time.Millisecond)
	require.Equal(t, 1.0, metrictest.Sum(t, reg, "dlq_worker_redriven_total", nil), "the unrelated record was redriven")
	out := readAll(t, source)
	require.Len(t, out, 1, "nothing was produced to the re-created topic")
	records, err := st.ListAfter(context.Background(), store.Filter{}, 0, 10)
	require.NoError(t, err)
	require.Len(t, records, 1)
	require.Equal(t, redrive.ReasonSourceUnavailable, records[0].Reason)
	require.Contains(t, records[0].ErrorMessage, "source unavailable: topic "+source+" was re-created since the dead letter was written (topic id ")
	require.Contains(t, records[0].ErrorMessage, "(share group g, delivery count 1)")
	rep, err := audit.Run(context.Background(), kcfg(t), st, dlq, rc.Group)
	require.NoError(t, err)
	require.Equal(t, 2, rep.Checked)
	require.Equal(t, 1, rep.InStore[store.StatusParked], "the second dead letter is parked")
	require.Equal(t, []store.Coordinates{{Topic: dlq, Partition: 0, Offset: 0}}, rep.Missing,
		"only the first dead letter's redrive is gone, deleted with its topic after the audit above found it")
	require.Empty(t, rep.Lost)
}

// What a worker saw of a source topic's id is recorded for every worker: a worker (or a
// worker restarted) that never saw the topic before its re-creation parks a dead letter
// written before it by the id another worker recorded, and produces nothing.
func TestSourceTopicIDsAreSharedByWorkers(t *testing.T) {
	t.Parallel()
	bs := testenv.KafkaBootstrap(t)
	source := kafkatest.CreateTopic(t, bs, 1, nil)
	seen, later := kafkatest.CreateTopic(t, bs, 1, nil), kafkatest.CreateTopic(t, bs, 1, nil)
	old := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	produce(t, source, sourceRecord(source, 0, "first", []byte("v"), old))
	produce(t, seen, sharePointer(0, source, 0, 0))

	st := storetest.New(t)
	resolveFirstPointer(t, st, "ids-first-", seen)

	written := time.Now()
	kafkatest.RecreateTopic(t, bs, source, 1, nil)
	produce(t, source, sourceRecord(source, 0, "unrelated", []byte("restored from elsewhere"), old))
	pointer := sharePointer(0, source, 0, 0)
	pointer.Timestamp = written
	produce(t, later, pointer)

	reg2 := prometheus.NewRegistry()
	second := route(testenv.UniqueName("ids-second-"), later)
	second.Backoff = &routes.Backoff{None: true}
	e2 := startEngineWith(t, redrive.Options{Clock: time.Now, Store: st, Kafka: kcfg(t), Registry: reg2}, second)
	row := requireParkedUnredriven(t, e2, st, reg2, second, source, &kafka.Message{Key: []byte("unrelated")})
	require.Contains(t, row.ErrorMessage, "source unavailable: topic "+source+" was re-created since the dead letter was written (topic id ")
	requireConserved(t, st, later, second.Group)
}
