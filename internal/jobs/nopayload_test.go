package jobs_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/jobs/jobstest"
	"github.com/dlqops/dlq/internal/store"
	"github.com/dlqops/dlq/internal/store/storetest"
	"github.com/dlqops/dlq/internal/testenv"
	"github.com/dlqops/dlq/internal/testenv/kafkatest"
)

// A replay job that reaches the runner with records without payload (share groups' dead
// letters whose source was gone; dlq-admin refuses such jobs, but a job of an earlier
// version may be waiting) replays the others and leaves those parked, failed with the
// reason, producing nothing for them; a single replay that gives the value replays it.
func TestReplayJobLeavesRecordsWithoutPayloadParked(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := storetest.New(t)
	target := kafkatest.CreateTopic(t, testenv.KafkaBootstrap(t), 1, nil)
	recs := make([]store.NewRecord, 3)
	for i := range recs {
		recs[i] = store.NewRecord{
			DLQ: store.Coordinates{Topic: "dlq.orders", Offset: int64(i)}, Origin: store.Origin{Topic: "orders", Partition: 0, Offset: int64(i)},
			Headers: []store.Header{{Key: "__dlq.errors.topic", Value: []byte("orders")}}, Timestamp: time.Now(),
			Reason: store.ReasonSourceUnavailable, Status: store.StatusParked, Route: "orders",
		}
	}
	recs[2].Key, recs[2].Value = []byte("k"), []byte("the group's copy")
	_, err := st.StoreBatch(ctx, recs, nil)
	require.NoError(t, err)
	page, err := st.ListAfter(ctx, store.Filter{}, 0, 10)
	require.NoError(t, err)
	require.Len(t, page, 3)
	startRunner(t, st, "w1", 30*time.Second, jobstest.Route("orders"))

	job := submit(t, st, store.JobSpec{Filter: &store.Filter{OriginalTopic: "orders"}, TargetTopic: target, ConfirmedCount: 3})
	require.Equal(t, []int64{1, 2, 0}, []int64{job.Done, job.Failed, job.Skipped})
	require.Contains(t, job.Error, "the record has no payload")
	requireRecord(t, st, page[0].ID, store.StatusParked, store.ReasonSourceUnavailable)
	requireRecord(t, st, page[1].ID, store.StatusParked, store.ReasonSourceUnavailable)
	require.EqualValues(t, 1, jobstest.Records(t, target), "only the record with its payload")

	job = submit(t, st, store.JobSpec{RecordIDs: []int64{page[0].ID}, TargetTopic: target, ConfirmedCount: 1,
		Edit: &store.Edit{ValueSet: true, Value: []byte("rebuilt")}})
	require.Equal(t, store.JobSucceeded, job.Status, job.Error)
	msgs := jobstest.Consume(t, target, 1, 2)
	require.Equal(t, "rebuilt", string(msgs[1].Value), "record "+strconv.FormatInt(page[0].ID, 10)+" replayed with the value given")
}
