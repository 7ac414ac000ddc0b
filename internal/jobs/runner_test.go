package jobs_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/dlqops/dlq/internal/headers"
	"github.com/dlqops/dlq/internal/jobs"
	"github.com/dlqops/dlq/internal/jobs/jobstest"
	"github.com/dlqops/dlq/internal/routes"
	"github.com/dlqops/dlq/internal/store"
	"github.com/dlqops/dlq/internal/store/storetest"
	"github.com/dlqops/dlq/internal/testenv"
	"github.com/dlqops/dlq/internal/testenv/kafkatest"
)

func TestMain(m *testing.M) {
	// librdkafka's background threads are not goroutines; its Go-side helpers end at Close.
	goleak.VerifyTestMain(m)
}

// startRunner starts a runner of routes with a short lease, stopped gracefully at the end
// of the test unless the test stopped it before.
func startRunner(t testing.TB, st *store.Store, owner string, lease time.Duration, routes ...routes.Config) *jobs.Runner {
	t.Helper()
	return jobstest.StartRunner(t, jobs.Config{Store: st, Routes: routes, Owner: owner, Lease: lease})
}

// waitProgress polls until the job has finished a record.
func waitProgress(t testing.TB, st *store.Store, id int64) {
	t.Helper()
	require.Eventually(t, func() bool {
		j, err := st.GetJob(context.Background(), id)
		require.NoError(t, err)
		return j.Done > 0
	}, 3*time.Minute, 5*time.Millisecond)
}

// waitJob polls until the job ends and returns it.
func waitJob(t testing.TB, st *store.Store, id int64) store.Job {
	t.Helper()
	var job store.Job
	require.Eventually(t, func() bool {
		var err error
		job, err = st.GetJob(context.Background(), id)
		require.NoError(t, err)
		return job.Status != store.JobPending && job.Status != store.JobRunning
	}, 3*time.Minute, 20*time.Millisecond)
	return job
}

func TestReplayJobKeepsRecordsExact(t *testing.T) {
	t.Parallel()
	st := storetest.New(t)
	target := kafkatest.CreateTopic(t, testenv.KafkaBootstrap(t), 3, nil)
	jobstest.Park(t, st, "orders", 20)
	job, _, err := st.SubmitJob(context.Background(), store.JobRequest{JobSpec: store.JobSpec{
		Kind: store.JobReplay, Filter: &store.Filter{Statuses: []store.Status{store.StatusParked}},
		TargetTopic: target, ResetRetry: true, ConfirmedCount: 20}}, store.Actor{Name: "ada"})
	require.NoError(t, err)
	startRunner(t, st, "w1", 30*time.Second, jobstest.Route("orders"))
	job = waitJob(t, st, job.ID)
	require.Equal(t, store.JobSucceeded, job.Status, job.Error)
	require.EqualValues(t, 20, job.Done)
	require.EqualValues(t, 20, job.Total)
	msgs := jobstest.Consume(t, target, 3, 20)
	require.Len(t, jobstest.CheckReplayed(t, st, msgs, job.ID, "ada", true), 20)
	for _, m := range msgs {
		rec, err := st.Get(context.Background(), mustRecordID(t, m, job.ID))
		require.NoError(t, err)
		require.Equal(t, store.Coordinates{Topic: target, Partition: m.TopicPartition.Partition, Offset: int64(m.TopicPartition.Offset)}, *rec.Produced)
	}
}

func mustRecordID(t testing.TB, m *kafka.Message, jobID int64) int64 {
	t.Helper()
	for _, h := range m.Headers {
		if h.Key == headers.KeyReplayID {
			var id int64
			_, err := fmt.Sscanf(string(h.Value), fmt.Sprintf("%d-%%d", jobID), &id)
			require.NoError(t, err)
			return id
		}
	}
	t.Fatalf("no %s header", headers.KeyReplayID)
	return 0
}

// A job of one to the original topic and partition; a record discarded meanwhile fails the
// job without producing anything; a cancelled job is never run.
func TestSingleReplayDiscardAndCancel(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := storetest.New(t)
	topic := kafkatest.CreateTopic(t, testenv.KafkaBootstrap(t), 3, nil)
	jobstest.Park(t, st, topic, 3)
	ada := store.Actor{Name: "ada"}
	one, _, err := st.SubmitJob(ctx, store.JobRequest{JobSpec: store.JobSpec{Kind: store.JobReplay, RecordIDs: []int64{2}, ConfirmedCount: 1}}, ada)
	require.NoError(t, err)
	cancelled, _, err := st.SubmitJob(ctx, store.JobRequest{JobSpec: store.JobSpec{Kind: store.JobReplay, RecordIDs: []int64{3}, ConfirmedCount: 1}}, ada)
	require.NoError(t, err)
	_, err = st.CancelJob(ctx, cancelled.ID, ada)
	require.NoError(t, err)
	discard, _, err := st.SubmitJob(ctx, store.JobRequest{JobSpec: store.JobSpec{Kind: store.JobDiscard, RecordIDs: []int64{1}, ConfirmedCount: 1}, Reason: "bad"}, ada)
	require.NoError(t, err)

	startRunner(t, st, "w1", 30*time.Second, jobstest.Route(topic))
	one = waitJob(t, st, one.ID)
	require.Equal(t, store.JobSucceeded, one.Status, one.Error)
	discard = waitJob(t, st, discard.ID)
	require.Equal(t, store.JobSucceeded, discard.Status)
	msgs := jobstest.Consume(t, topic, 3, 1)
	rec, err := st.Get(ctx, 2)
	require.NoError(t, err)
	require.Equal(t, rec.Origin.Partition, msgs[0].TopicPartition.Partition, "the original partition")
	jobstest.CheckReplayed(t, st, msgs, one.ID, "ada", false)
	rec, err = st.Get(ctx, 1)
	require.NoError(t, err)
	require.Equal(t, store.StatusDiscarded, rec.Status)
	rec, err = st.Get(ctx, 3)
	require.NoError(t, err)
	require.Equal(t, store.StatusParked, rec.Status, "the cancelled job never ran")

	// A replay of a record discarded after the job was accepted fails without producing.
	again, _, err := st.SubmitJob(ctx, store.JobRequest{JobSpec: store.JobSpec{Kind: store.JobReplay, Filter: &store.Filter{DLQTopic: topic + ".dlq", Statuses: []store.Status{store.StatusDiscarded}}}}, ada)
	require.NoError(t, err)
	again = waitJob(t, st, again.ID)
	require.Equal(t, store.JobFailed, again.Status)
	require.Contains(t, again.Error, "not parked or scheduled")
}

// The runner is killed mid-job (its Stop gets no time: the work is abandoned as in a
// crash); another instance resumes after the lease expires and nothing is lost. Copies
// produced twice in the crash window carry the same replay id.
func TestKilledMidJobResumes(t *testing.T) {
	t.Parallel()
	const n = 6000 // 6 s at 1,000/s: the kill lands mid-job even on a loaded machine
	st := storetest.New(t)
	target := kafkatest.CreateTopic(t, testenv.KafkaBootstrap(t), 3, nil)
	jobstest.Park(t, st, "orders", n)
	job, _, err := st.SubmitJob(context.Background(), store.JobRequest{JobSpec: store.JobSpec{
		Kind: store.JobReplay, Filter: &store.Filter{OriginalTopic: "orders"}, TargetTopic: target,
		RatePerSecond: 1000, ConfirmedCount: n}}, store.Actor{Name: "ada"})
	require.NoError(t, err)

	const lease = 2 * time.Second
	first := jobstest.StartRunner(t, jobs.Config{Store: st, Routes: jobstest.Routes("orders"), Owner: "doomed", Lease: lease})
	waitProgress(t, st, job.ID)
	jobstest.Abandon(t, first)
	mid, err := st.GetJob(context.Background(), job.ID)
	require.NoError(t, err)
	require.Equal(t, store.JobRunning, mid.Status)
	require.Less(t, mid.Done, int64(n))

	startRunner(t, st, "rescuer", lease, jobstest.Route("orders"))
	job = waitJob(t, st, job.ID)
	require.Equal(t, store.JobSucceeded, job.Status, job.Error)
	replayed, err := st.Count(context.Background(), store.Filter{Statuses: []store.Status{store.StatusReplayed}})
	require.NoError(t, err)
	require.EqualValues(t, n, replayed)
	msgs := jobstest.Consume(t, target, 3, n)
	seen := jobstest.CheckReplayed(t, st, msgs, job.ID, "ada", false)
	require.Len(t, seen, n, "every record reached the topic")
}

// A job leases, produces and finishes its records store.MaxJobPage (2,000) at a time, twice
// a listing's page: each page costs a share of work of its own.
func TestAJobWorksInPagesOfTwoThousand(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := storetest.New(t)
	target := kafkatest.CreateTopic(t, testenv.KafkaBootstrap(t), 3, nil)
	jobstest.Park(t, st, "orders", 4000)
	job, _, err := st.SubmitJob(ctx, store.JobRequest{JobSpec: store.JobSpec{
		Kind: store.JobReplay, Filter: &store.Filter{Statuses: []store.Status{store.StatusParked}},
		TargetTopic: target, ConfirmedCount: 4000}}, store.Actor{Name: "ada"})
	require.NoError(t, err)
	startRunner(t, st, "w1", 30*time.Second, jobstest.Route("orders"))
	job = waitJob(t, st, job.ID)
	require.Equal(t, store.JobSucceeded, job.Status, job.Error)
	require.EqualValues(t, 4000, job.Done)
	leases, err := st.SearchAudit(ctx, store.AuditFilter{Action: "begin_replay", JobID: job.ID}, 0, store.MaxPageSize)
	require.NoError(t, err)
	require.Equal(t, 2, len(leases), "pages leased")
	for _, e := range leases {
		require.EqualValues(t, 2000, e.Affected)
	}
	require.EqualValues(t, 4000, jobstest.Records(t, target))
}
