package jobs_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/headers"
	"github.com/dlqops/dlq/internal/jobs"
	"github.com/dlqops/dlq/internal/jobs/jobstest"
	"github.com/dlqops/dlq/internal/kafkaclient"
	"github.com/dlqops/dlq/internal/store"
	"github.com/dlqops/dlq/internal/store/storetest"
	"github.com/dlqops/dlq/internal/testenv"
	"github.com/dlqops/dlq/internal/testenv/kafkatest"
)

// submit submits a replay job and waits for its end.
func submit(t *testing.T, st *store.Store, spec store.JobSpec) store.Job {
	t.Helper()
	spec.Kind = store.JobReplay
	job, _, err := st.SubmitJob(context.Background(), store.JobRequest{JobSpec: spec}, store.Actor{Name: "ada"})
	require.NoError(t, err)
	return waitJob(t, st, job.ID)
}

func requireRecord(t *testing.T, st *store.Store, id int64, status store.Status, reason store.Reason) {
	t.Helper()
	rec, err := st.Get(context.Background(), id)
	require.NoError(t, err)
	require.Equal(t, status, rec.Status, "record %d", id)
	require.Equal(t, reason, rec.Reason, "record %d", id)
}

// The route's allowed_targets bind replays as they bind redrives: a record whose original
// topic the route forbids is not replayed there by a single replay, a bulk replay or an
// explicit target the route does not allow either; it is parked target_not_allowed and
// leaves only through an explicit, allowed target. Nothing reaches a forbidden topic.
func TestReplayHonoursAllowedTargets(t *testing.T) {
	t.Parallel()
	bootstrap := testenv.KafkaBootstrap(t)
	forbidden := kafkatest.CreateTopic(t, bootstrap, 3, nil)
	other := kafkatest.CreateTopic(t, bootstrap, 3, nil)
	allowed := kafkatest.CreateTopic(t, bootstrap, 3, nil)
	st := storetest.New(t)
	jobstest.Park(t, st, forbidden, 4) // ids 1-4, route named forbidden
	startRunner(t, st, "w1", 30*time.Second, jobstest.Route(forbidden, allowed))

	single := submit(t, st, store.JobSpec{RecordIDs: []int64{1}, ConfirmedCount: 1})
	require.Equal(t, store.JobFailed, single.Status)
	require.Contains(t, single.Error, "target_not_allowed")
	requireRecord(t, st, 1, store.StatusParked, store.ReasonTargetNotAllowed)

	bulk := submit(t, st, store.JobSpec{Filter: &store.Filter{OriginalTopic: forbidden, Statuses: []store.Status{store.StatusParked}}, ConfirmedCount: 4})
	require.Equal(t, store.JobFailed, bulk.Status)
	require.EqualValues(t, 0, bulk.Done)
	require.EqualValues(t, 4, bulk.Failed)

	explicit := submit(t, st, store.JobSpec{RecordIDs: []int64{2}, TargetTopic: other, ConfirmedCount: 1})
	require.Equal(t, store.JobFailed, explicit.Status)
	require.Contains(t, explicit.Error, other+" is not in allowed_targets")

	through := submit(t, st, store.JobSpec{RecordIDs: []int64{3}, TargetTopic: allowed, ConfirmedCount: 1})
	require.Equal(t, store.JobSucceeded, through.Status, through.Error)
	msgs := jobstest.Consume(t, allowed, 3, 1)
	require.Len(t, jobstest.CheckReplayed(t, st, msgs, through.ID, "ada", false), 1)

	// Every record accounted for: one replayed where it was allowed, the rest parked.
	requireRecord(t, st, 3, store.StatusReplayed, store.ReasonTargetNotAllowed)
	for _, id := range []int64{1, 2, 4} {
		requireRecord(t, st, id, store.StatusParked, store.ReasonTargetNotAllowed)
	}
	require.Zero(t, jobstest.Records(t, forbidden), "nothing reached the forbidden original topic")
	require.Zero(t, jobstest.Records(t, other), "nothing reached the forbidden explicit target")
}

// A replay never creates a topic and never waits for one: a record whose original topic
// is gone is parked unknown_topic at once; a job whose explicit target does not exist
// fails before it touches a record.
func TestReplayToMissingTopic(t *testing.T) {
	t.Parallel()
	st := storetest.New(t)
	gone := testenv.UniqueName("gone-")
	jobstest.Park(t, st, gone, 2) // ids 1-2
	missing := testenv.UniqueName("missing-")
	startRunner(t, st, "w1", 30*time.Second, jobstest.Route(gone))

	job := submit(t, st, store.JobSpec{RecordIDs: []int64{1}, ConfirmedCount: 1})
	require.Equal(t, store.JobFailed, job.Status)
	require.Contains(t, job.Error, "topic "+gone+" does not exist")
	requireRecord(t, st, 1, store.StatusParked, store.ReasonUnknownTopic)

	job = submit(t, st, store.JobSpec{RecordIDs: []int64{2}, TargetTopic: missing, ConfirmedCount: 1})
	require.Equal(t, store.JobFailed, job.Status)
	require.Equal(t, "target topic "+missing+" does not exist", job.Error)
	requireRecord(t, st, 2, store.StatusParked, store.ReasonExhausted)
	entries, err := st.ListAudit(context.Background(), 0, store.MaxPageSize)
	require.NoError(t, err)
	for _, e := range entries {
		if e.JobID == job.ID {
			require.NotEqual(t, "begin_replay", e.Action, "no record was leased")
		}
	}
	require.Zero(t, jobstest.Records(t, gone))
	require.Zero(t, jobstest.Records(t, missing))
}

// A record redriven once, failed again and parked carries that redrive's id; its replay
// must not, or consumers de-duplicating on it drop the replay. The replay carries its own
// id, "<job>-<record>", and a new replay of the record gets a new one.
func TestReplayCarriesItsOwnDedupeID(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, url := storetest.NewWithURL(t)
	topic := kafkatest.CreateTopic(t, testenv.KafkaBootstrap(t), 1, nil)
	_, err := st.StoreBatch(ctx, []store.NewRecord{{
		DLQ:    store.Coordinates{Topic: topic + ".dlq", Partition: 0, Offset: 8},
		Origin: store.Origin{Topic: topic, Partition: 0, Offset: 3},
		Key:    []byte("k"), Value: []byte("v"), Timestamp: time.Now().Add(-time.Hour).Truncate(time.Millisecond).UTC(),
		Headers: []store.Header{{Key: headers.KeyRetryCount, Value: []byte("5")}, {Key: headers.KeyOriginalTopic, Value: []byte(topic)},
			{Key: headers.KeyRedriveID, Value: []byte(topic + ".dlq/0/7")}},
		RetryCount: 5, Reason: store.ReasonExhausted, Status: store.StatusParked, Route: topic,
	}}, nil)
	require.NoError(t, err)
	startRunner(t, st, "w1", 30*time.Second, jobstest.Route(topic))

	first := submit(t, st, store.JobSpec{RecordIDs: []int64{1}, ConfirmedCount: 1})
	require.Equal(t, store.JobSucceeded, first.Status, first.Error)
	conn, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer conn.Close(ctx)
	// The runner folds the outcome into the row after the job ends; parked again before
	// that, the fold would mark the row replayed over it.
	require.Eventually(t, func() bool {
		var status string
		require.NoError(t, conn.QueryRow(ctx, `SELECT status FROM dead_letters WHERE id = 1`).Scan(&status))
		return status == string(store.StatusReplayed)
	}, time.Minute, 10*time.Millisecond, "the first replay's outcome folded into its row")
	// The operator parks it again (as a consumer failing it again would) and replays it anew.
	_, err = conn.Exec(ctx, `UPDATE dead_letters SET status = 'parked', job_id = NULL, replay_id = NULL WHERE id = 1`)
	require.NoError(t, err)
	second := submit(t, st, store.JobSpec{RecordIDs: []int64{1}, ConfirmedCount: 1})
	require.Equal(t, store.JobSucceeded, second.Status, second.Error)

	msgs := jobstest.Consume(t, topic, 1, 2)
	require.Len(t, msgs, 2)
	var ids []string
	for _, m := range msgs {
		var replayID string
		for _, h := range m.Headers {
			require.NotEqual(t, headers.KeyRedriveID, h.Key, "a replay carries no redrive id")
			if h.Key == headers.KeyReplayID {
				replayID = string(h.Value)
			}
		}
		ids = append(ids, replayID)
	}
	require.Equal(t, []string{fmt.Sprintf("%d-1", first.ID), fmt.Sprintf("%d-1", second.ID)}, ids)
}

// requireSettled checks that no record of the job is left replaying, that every replayed
// row's record is on target exactly as stored, and that nothing else reached it: a parked
// record was never produced.
func requireSettled(t *testing.T, st *store.Store, target string, jobID int64, n int) (replayed int64) {
	t.Helper()
	ctx := context.Background()
	require.Eventually(t, func() bool {
		left, err := st.Count(ctx, store.Filter{Statuses: []store.Status{store.StatusReplaying}})
		require.NoError(t, err)
		return left == 0
	}, time.Minute, 20*time.Millisecond, "records left replaying")
	replayed, err := st.Count(ctx, store.Filter{Statuses: []store.Status{store.StatusReplayed}})
	require.NoError(t, err)
	parked, err := st.Count(ctx, store.Filter{Statuses: []store.Status{store.StatusParked}})
	require.NoError(t, err)
	require.EqualValues(t, n, replayed+parked, "every record replayed or parked")
	onTarget := jobstest.Records(t, target)
	require.Equal(t, replayed, onTarget, "only replayed records reached the target")
	if replayed > 0 {
		seen := jobstest.CheckReplayed(t, st, jobstest.Consume(t, target, 3, int(replayed)), jobID, "ada", false)
		require.Len(t, seen, int(replayed))
	}
	return replayed
}

// requireNoLeaseAfterCancel checks that no begin_replay audit row of job follows its
// cancel_job row.
func requireNoLeaseAfterCancel(t *testing.T, st *store.Store, jobID int64) {
	t.Helper()
	entries, err := st.ListAudit(context.Background(), 0, store.MaxPageSize)
	require.NoError(t, err)
	// Newest first: everything before the cancel in this list came after it.
	for _, e := range entries {
		if e.JobID != jobID {
			continue
		}
		if e.Action == "cancel_job" {
			return
		}
		require.NotEqual(t, "begin_replay", e.Action, "a lease after the cancel")
	}
	t.Fatal("no cancel_job audit row")
}

// A running job is cancelled, at full speed and at one record per second: it stops,
// what was in flight settles, every record it leased and did not produce goes back to
// parked, nothing is leased after the cancel, and the records produced are on the target.
func TestCancelMidJob(t *testing.T) {
	t.Parallel()
	for name, rate := range map[string]int{"full speed": 0, "rate 1": 1} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			const n = 20_000
			ctx := context.Background()
			st := storetest.New(t)
			target := kafkatest.CreateTopic(t, testenv.KafkaBootstrap(t), 3, nil)
			jobstest.Park(t, st, "orders", n)
			job, _, err := st.SubmitJob(ctx, store.JobRequest{JobSpec: store.JobSpec{Kind: store.JobReplay,
				Filter: &store.Filter{OriginalTopic: "orders"}, TargetTopic: target, RatePerSecond: rate,
				ConfirmedCount: n}}, store.Actor{Name: "ada"})
			require.NoError(t, err)
			startRunner(t, st, "w1", 30*time.Second, jobstest.Route("orders"))
			waitProgress(t, st, job.ID)
			_, err = st.CancelJob(ctx, job.ID, store.Actor{Name: "ada"})
			require.NoError(t, err)

			replayed := requireSettled(t, st, target, job.ID, n)
			require.Less(t, replayed, int64(n), "the job stopped before the end")
			requireNoLeaseAfterCancel(t, st, job.ID)
			job, err = st.GetJob(ctx, job.ID)
			require.NoError(t, err)
			require.Equal(t, store.JobCancelled, job.Status)
		})
	}
}

// A runner dies mid-job (abandoned, as in a crash) and the job is cancelled meanwhile: no
// holder will resume it, and the sweeper of another runner returns its leased records to
// parked once their leases expire.
func TestCancelWhileRunnerDeadSweeps(t *testing.T) {
	t.Parallel()
	const n = 3000
	ctx := context.Background()
	st := storetest.New(t)
	target := kafkatest.CreateTopic(t, testenv.KafkaBootstrap(t), 3, nil)
	jobstest.Park(t, st, "orders", n)
	job, _, err := st.SubmitJob(ctx, store.JobRequest{JobSpec: store.JobSpec{Kind: store.JobReplay,
		Filter: &store.Filter{OriginalTopic: "orders"}, TargetTopic: target, RatePerSecond: 1000,
		ConfirmedCount: n}}, store.Actor{Name: "ada"})
	require.NoError(t, err)
	const lease = 2 * time.Second
	doomed := jobstest.StartRunner(t, jobs.Config{Store: st, Routes: jobstest.Routes("orders"), Owner: "doomed", Lease: lease})
	require.Eventually(t, func() bool {
		left, err := st.Count(ctx, store.Filter{Statuses: []store.Status{store.StatusReplaying}})
		require.NoError(t, err)
		return left > 0
	}, time.Minute, time.Millisecond)
	jobstest.Abandon(t, doomed)
	_, err = st.CancelJob(ctx, job.ID, store.Actor{Name: "ada"})
	require.NoError(t, err)

	startRunner(t, st, "sweeper", lease, jobstest.Route("orders"))
	require.Eventually(t, func() bool {
		left, err := st.Count(ctx, store.Filter{Statuses: []store.Status{store.StatusReplaying}})
		require.NoError(t, err)
		return left == 0
	}, time.Minute, 20*time.Millisecond, "records left replaying")
	replayed, err := st.Count(ctx, store.Filter{Statuses: []store.Status{store.StatusReplayed}})
	require.NoError(t, err)
	parked, err := st.Count(ctx, store.Filter{Statuses: []store.Status{store.StatusParked}})
	require.NoError(t, err)
	require.EqualValues(t, n, replayed+parked, "every record replayed or parked")
	// A crash may leave produced records unrecorded (parked again, their replay id on the
	// target): at least every replayed one is there.
	require.GreaterOrEqual(t, jobstest.Records(t, target), replayed)
}

// Two slow bulk jobs (1 record/s) progress side by side, and a single-record replay
// submitted after them is done while both still run: it never waits behind bulk jobs,
// even when they hold every general slot.
func TestSingleReplayNotBehindBulkJobs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := storetest.New(t)
	bootstrap := testenv.KafkaBootstrap(t)
	target := kafkatest.CreateTopic(t, bootstrap, 3, nil)
	single := kafkatest.CreateTopic(t, bootstrap, 3, nil)
	jobstest.Park(t, st, "orders", 1000)
	jobstest.Park(t, st, "payments", 1000)
	jobstest.Park(t, st, single, 1)
	ada := store.Actor{Name: "ada"}
	var bulk []store.Job
	for _, topic := range []string{"orders", "payments"} {
		job, _, err := st.SubmitJob(ctx, store.JobRequest{JobSpec: store.JobSpec{Kind: store.JobReplay,
			Filter: &store.Filter{OriginalTopic: topic}, TargetTopic: target, RatePerSecond: 1, ConfirmedCount: 1000}}, ada)
		require.NoError(t, err)
		bulk = append(bulk, job)
	}
	jobstest.StartRunner(t, jobs.Config{Store: st, Kafka: kafkaclient.Config{BootstrapServers: bootstrap},
		Routes: jobstest.Routes("orders", "payments", single), Concurrency: 2, Owner: "w1"})
	t.Cleanup(func() { // before the runner stops
		for _, job := range bulk {
			_, _ = st.CancelJob(ctx, job.ID, ada)
		}
	})
	for _, job := range bulk {
		require.Eventually(t, func() bool {
			j, err := st.GetJob(ctx, job.ID)
			require.NoError(t, err)
			return j.Done > 0
		}, time.Minute, 10*time.Millisecond, "both bulk jobs progress at once")
	}

	one := submit(t, st, store.JobSpec{RecordIDs: []int64{2001}, ConfirmedCount: 1})
	require.Equal(t, store.JobSucceeded, one.Status, one.Error)
	require.Len(t, jobstest.CheckReplayed(t, st, jobstest.Consume(t, single, 3, 1), one.ID, "ada", false), 1)
	for _, job := range bulk {
		j, err := st.GetJob(ctx, job.ID)
		require.NoError(t, err)
		require.Equal(t, store.JobRunning, j.Status, "the bulk jobs were still running")
	}
}

// Two bulk jobs race for the same 2,000 records: each record is replayed once, by one of
// them, and each job's counts add up: total = done + failed + skipped, the records the
// other job took counted as skipped.
func TestTwoJobsRaceForTheSameRecords(t *testing.T) {
	t.Parallel()
	const n = 2000
	ctx := context.Background()
	st := storetest.New(t)
	bootstrap := testenv.KafkaBootstrap(t)
	target := kafkatest.CreateTopic(t, bootstrap, 3, nil)
	jobstest.Park(t, st, "orders", n)
	var racers []store.Job
	for range 2 {
		job, _, err := st.SubmitJob(ctx, store.JobRequest{JobSpec: store.JobSpec{Kind: store.JobReplay,
			Filter: &store.Filter{OriginalTopic: "orders"}, TargetTopic: target, ConfirmedCount: n}}, store.Actor{Name: "ada"})
		require.NoError(t, err)
		racers = append(racers, job)
	}
	jobstest.StartRunner(t, jobs.Config{Store: st, Kafka: kafkaclient.Config{BootstrapServers: bootstrap},
		Routes: jobstest.Routes("orders"), Concurrency: 2, BatchSize: 100, Owner: "w1"})

	var done int64
	for _, job := range racers {
		job = waitJob(t, st, job.ID)
		require.Zero(t, job.Failed, job.Error)
		require.Equal(t, job.Total, job.Done+job.Failed+job.Skipped, "%+v", job.JobProgress)
		require.EqualValues(t, n, job.Total)
		done += job.Done
	}
	require.EqualValues(t, n, done, "each record replayed by one job")
	replayed, err := st.Count(ctx, store.Filter{Statuses: []store.Status{store.StatusReplayed}})
	require.NoError(t, err)
	require.EqualValues(t, n, replayed)
	require.EqualValues(t, n, jobstest.Records(t, target), "no record produced twice")
}
