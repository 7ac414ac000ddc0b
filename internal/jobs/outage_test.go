package jobs_test

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/audit"
	"github.com/dlqops/dlq/internal/jobs"
	"github.com/dlqops/dlq/internal/jobs/jobstest"
	"github.com/dlqops/dlq/internal/kafkaclient"
	"github.com/dlqops/dlq/internal/store"
	"github.com/dlqops/dlq/internal/store/storetest"
	"github.com/dlqops/dlq/internal/testenv/kafkatest"
	"github.com/dlqops/dlq/internal/testenv/metrictest"
)

// The broker stops in the middle of a bulk replay and comes back 20 s later. Deliveries
// in flight time out during the outage (the producer's message.timeout.ms is 5 s here) and
// lookups fail: the job produces those records again after a backoff, waits, and ends
// succeeded once the broker is back. No record is counted failed or parked for the outage,
// every one is on the topic with its replay id, none is left replaying, and the
// conservation audit accounts for every record.
func TestBrokerStoppedMidJob(t *testing.T) {
	t.Parallel()
	const n = 3000
	ctx := context.Background()
	b := kafkatest.StartBroker(t)
	bs := b.Bootstrap()
	st := storetest.New(t)
	topic := kafkatest.CreateTopic(t, bs, 3, nil)
	jobstest.Park(t, st, topic, n)
	group := jobstest.AuditableDLQ(t, bs, topic, n)
	job, _, err := st.SubmitJob(ctx, store.JobRequest{JobSpec: store.JobSpec{Kind: store.JobReplay,
		Filter: &store.Filter{OriginalTopic: topic}, RatePerSecond: 300, ConfirmedCount: n}}, store.Actor{Name: "ada"})
	require.NoError(t, err)

	reg := prometheus.NewRegistry()
	kc := kafkaclient.Config{BootstrapServers: bs, Extra: map[string]string{"message.timeout.ms": "5000"}}
	jobstest.StartRunner(t, jobs.Config{Store: st, Kafka: kc, Routes: jobstest.Routes(topic), Owner: "w1", Registerer: reg})
	waitProgress(t, st, job.ID)

	b.Stop()
	down := time.Now()
	require.Eventually(t, func() bool { return metrictest.Sum(t, reg, "dlq_job_produce_retries_total", nil) > 0 },
		2*time.Minute, 100*time.Millisecond, "records that failed during the outage are produced again")
	<-time.After(time.Until(down.Add(20 * time.Second))) // the outage's length, not a synchronization
	mid, err := st.GetJob(ctx, job.ID)
	require.NoError(t, err)
	require.Equal(t, store.JobRunning, mid.Status, "the job waits for the broker")
	require.Zero(t, mid.Failed)
	b.Start()

	job = waitJob(t, st, job.ID)
	require.Equal(t, store.JobSucceeded, job.Status, job.Error)
	require.EqualValues(t, n, job.Done)
	require.Zero(t, job.Failed, "nothing failed for a transient cause")
	require.Zero(t, job.Skipped)
	for _, s := range []store.Status{store.StatusReplaying, store.StatusParked} {
		left, err := st.Count(ctx, store.Filter{Statuses: []store.Status{s}})
		require.NoError(t, err)
		require.Zero(t, left, "records left %s", s)
	}
	msgs := jobstest.ConsumeFrom(t, bs, topic, 3, n)
	require.Len(t, jobstest.CheckReplayed(t, st, msgs, job.ID, "ada", false), n, "every record on the topic")
	t.Logf("%d copies of %d records; %v records produced again", len(msgs), n, metrictest.Sum(t, reg, "dlq_job_produce_retries_total", nil))

	rep, err := audit.Run(ctx, kc, st, topic+".dlq", group)
	require.NoError(t, err)
	require.True(t, rep.OK(), rep.String())
	require.Equal(t, n, rep.Checked)
	require.Equal(t, n, rep.InStore[store.StatusReplayed], rep.String())
}
