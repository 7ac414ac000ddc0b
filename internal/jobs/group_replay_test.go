package jobs_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/headers"
	"github.com/dlqops/dlq/internal/jobs/jobstest"
	"github.com/dlqops/dlq/internal/routes"
	"github.com/dlqops/dlq/internal/store"
	"github.com/dlqops/dlq/internal/store/storetest"
	"github.com/dlqops/dlq/internal/testenv"
	"github.com/dlqops/dlq/internal/testenv/kafkatest"
)

// parkFailedBy stores one parked record of topic per entry of groups, record i+1 failed by
// groups[i] as the header of the same entry of conventions names it ("" names none).
func parkFailedBy(t *testing.T, st *store.Store, topic string, groups, conventions []string) {
	t.Helper()
	var recs []store.NewRecord
	for i, g := range groups {
		hs := []store.Header{{Key: headers.KeyOriginalTopic, Value: []byte(topic)}}
		switch conventions[i] {
		case "dlq":
			hs = append(hs, store.Header{Key: headers.KeyConsumerGroup, Value: []byte(g)})
		case "spring":
			hs = []store.Header{{Key: "kafka_dlt-original-topic", Value: []byte(topic)},
				{Key: "kafka_dlt-original-consumer-group", Value: []byte(g)}}
		}
		recs = append(recs, store.NewRecord{
			DLQ:    store.Coordinates{Topic: topic + ".dlq", Partition: 0, Offset: int64(i)},
			Origin: store.Origin{Topic: topic, Partition: 0, Offset: int64(i)},
			Key:    []byte("k"), Value: []byte("v"), Timestamp: time.Now().Add(-time.Hour).Truncate(time.Millisecond).UTC(),
			Headers: hs, Reason: store.ReasonExhausted, Status: store.StatusParked, Route: topic,
		})
	}
	_, err := st.StoreBatch(context.Background(), recs, nil)
	require.NoError(t, err)
}

// requireAborted checks that the job's audit rows record the abort of id: a record the job
// did not send is accounted for there, not only in its row.
func requireAborted(t *testing.T, st *store.Store, jobID, id int64) {
	t.Helper()
	entries, err := st.ListAudit(context.Background(), 0, store.MaxPageSize)
	require.NoError(t, err)
	for _, e := range entries {
		if e.JobID == jobID && e.Action == "abort_replay" && slices.Contains(e.RecordIDs, id) {
			return
		}
	}
	t.Fatalf("no abort_replay audit row of job %d names record %d", jobID, id)
}

// A bulk replay with redrive_to group_topic sends each record to the topic of the group
// that failed it, named by our header or Spring's, bound by the route's allowed_targets
// like any target; a record whose group is unknown is not sent to the source topic but
// stays parked unknown_group, counted and audited. Nothing reaches the source topic.
func TestBulkReplayToTheFailingGroupsTopic(t *testing.T) {
	t.Parallel()
	bootstrap := testenv.KafkaBootstrap(t)
	topic := kafkatest.CreateTopic(t, bootstrap, 1, nil)
	svcA := kafkatest.CreateNamedTopic(t, bootstrap, routes.GroupTopic(routes.DefaultGroupTopicTemplate, topic, "svc-a"), 1, nil)
	svcB := kafkatest.CreateNamedTopic(t, bootstrap, routes.GroupTopic(routes.DefaultGroupTopicTemplate, topic, "svc-b"), 1, nil)
	st := storetest.New(t)
	// Records 1 and 2 failed in svc-a (ours, Spring's), 3 in svc-b, 4 in a group nobody named.
	parkFailedBy(t, st, topic, []string{"svc-a", "svc-a", "svc-b", ""}, []string{"dlq", "spring", "dlq", ""})
	startRunner(t, st, "w1", 30*time.Second, jobstest.Route(topic, topic, svcA))

	job := submit(t, st, store.JobSpec{Filter: &store.Filter{OriginalTopic: topic, Statuses: []store.Status{store.StatusParked}},
		RedriveTo: routes.RedriveToGroupTopic, ConfirmedCount: 4})
	require.Equal(t, store.JobSucceeded, job.Status, "some records went")
	require.Contains(t, job.Error, "2 of 4 records failed")
	require.EqualValues(t, 2, job.Done)
	require.EqualValues(t, 2, job.Failed)

	msgs := jobstest.Consume(t, svcA, 1, 2)
	require.ElementsMatch(t, []int64{1, 2}, []int64{mustRecordID(t, msgs[0], job.ID), mustRecordID(t, msgs[1], job.ID)})
	for _, m := range msgs {
		env := headers.Decode(headers.From(m.Headers)).Envelope
		require.Equal(t, "svc-a", env.Group, "the replay still names the group that failed it")
		require.Empty(t, env.TargetGroup, "a group's own topic needs no address")
	}
	requireRecord(t, st, 3, store.StatusParked, store.ReasonTargetNotAllowed)
	requireRecord(t, st, 4, store.StatusParked, store.ReasonUnknownGroup)
	requireAborted(t, st, job.ID, 4)
	require.Zero(t, jobstest.Records(t, topic), "nothing reached the source topic")
	require.Zero(t, jobstest.Records(t, svcB), "nothing reached a group's topic the route does not allow")
}

// A replay with redrive_to group_header sends each record to its source topic addressed
// to the group that failed it; one whose group is unknown is not sent to every group but
// stays parked unknown_group.
func TestReplayAddressedToTheFailingGroup(t *testing.T) {
	t.Parallel()
	topic := kafkatest.CreateTopic(t, testenv.KafkaBootstrap(t), 1, nil)
	st := storetest.New(t)
	parkFailedBy(t, st, topic, []string{"svc-a", ""}, []string{"spring", ""})
	startRunner(t, st, "w1", 30*time.Second, jobstest.Route(topic))

	single := submit(t, st, store.JobSpec{RecordIDs: []int64{1}, RedriveTo: routes.RedriveToGroupHeader, ConfirmedCount: 1})
	require.Equal(t, store.JobSucceeded, single.Status, single.Error)
	unknown := submit(t, st, store.JobSpec{RecordIDs: []int64{2}, RedriveTo: routes.RedriveToGroupHeader, ConfirmedCount: 1})
	require.Equal(t, store.JobFailed, unknown.Status)
	require.Contains(t, unknown.Error, string(store.ReasonUnknownGroup))
	requireRecord(t, st, 2, store.StatusParked, store.ReasonUnknownGroup)
	requireAborted(t, st, unknown.ID, 2)

	msgs := jobstest.Consume(t, topic, 1, 1)
	require.EqualValues(t, 1, mustRecordID(t, msgs[0], single.ID))
	require.Equal(t, "svc-a", headers.Decode(headers.From(msgs[0].Headers)).Envelope.TargetGroup)
	require.EqualValues(t, 1, jobstest.Records(t, topic), "the record of no known group was not sent")
}
