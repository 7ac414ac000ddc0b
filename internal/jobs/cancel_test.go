package jobs_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/jobs/jobstest"
	"github.com/dlqops/dlq/internal/store"
	"github.com/dlqops/dlq/internal/store/storetest"
	"github.com/dlqops/dlq/internal/testenv"
	"github.com/dlqops/dlq/internal/testenv/kafkatest"
)

// An unthrottled bulk replay of 10,000 parked records is cancelled while it runs, with up
// to 10,000 records handed to the producer ahead of their acknowledgements. Once what was
// in flight settled, the job's counts are the truth: done is every record that reached
// the target (a consumer reads exactly the rows marked replayed, and no other), the rest
// are parked again, the job says how many were in flight at the cancel (handed to the
// producer and not yet in the counts it showed), and an audit row says so.
func TestCancelledJobCountsWhatReachedTheTarget(t *testing.T) {
	t.Parallel()
	const n = 10_000
	ctx := context.Background()
	st := storetest.New(t)
	target := kafkatest.CreateTopic(t, testenv.KafkaBootstrap(t), 3, nil)
	jobstest.Park(t, st, "orders", n)
	job, _, err := st.SubmitJob(ctx, store.JobRequest{JobSpec: store.JobSpec{Kind: store.JobReplay,
		Filter: &store.Filter{OriginalTopic: "orders"}, TargetTopic: target, ConfirmedCount: n}}, store.Actor{Name: "ada"})
	require.NoError(t, err)
	startRunner(t, st, "w1", 30*time.Second, jobstest.Route("orders"))
	waitProgress(t, st, job.ID)
	cancelled, err := st.CancelJob(ctx, job.ID, store.Actor{Name: "ada"})
	require.NoError(t, err, "cancelled while it runs")
	t.Logf("cancelled at done %d", cancelled.Done)

	replayed := requireSettled(t, st, target, job.ID, n)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		job, err = st.GetJob(ctx, job.ID)
		require.NoError(t, err)
		assert.NotNil(c, job.InFlightAtCancel, "the job says how many records were in flight at the cancel")
		assert.Equal(c, replayed, job.Done, "done counts every record that reached the target")
	}, time.Minute, 20*time.Millisecond)
	require.Equal(t, store.JobCancelled, job.Status)
	require.Zero(t, job.Failed)
	parked, err := st.Count(ctx, store.Filter{Statuses: []store.Status{store.StatusParked}})
	require.NoError(t, err)
	require.Equal(t, parked, job.Total-job.Done-job.Failed-job.Skipped, "what the job did not count is parked again")
	require.Equal(t, cancelled.Done+*job.InFlightAtCancel, job.Done,
		"the broker took every record: done is what the job showed at the cancel plus what was in flight then")
	t.Logf("done %d of %d, %d in flight at the cancel", job.Done, n, *job.InFlightAtCancel)

	entries, err := st.ListAudit(ctx, 0, store.MaxPageSize)
	require.NoError(t, err)
	var settled []store.AuditEntry
	for _, e := range entries {
		if e.JobID == job.ID && e.Action == "settle_cancelled_job" {
			settled = append(settled, e)
		}
	}
	require.Len(t, settled, 1, "one audit row for the job's final counts")
	require.Equal(t, job.Done, settled[0].Affected)
	require.True(t, strings.HasPrefix(settled[0].Actor, "w1"), "written by the job's holder, not %q", settled[0].Actor)
	require.Equal(t, fmt.Sprintf("cancelled with %d records in flight; in all %d of %d records reached the target, 0 failed, %d skipped, %d left where they were",
		*job.InFlightAtCancel, job.Done, job.Total, job.Skipped, parked), settled[0].Reason)
}
