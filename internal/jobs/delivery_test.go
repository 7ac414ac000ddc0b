package jobs_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/jobs/jobstest"
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
