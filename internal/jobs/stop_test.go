package jobs_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/dlqops/dlq/internal/jobs"
	"github.com/dlqops/dlq/internal/jobs/jobstest"
	"github.com/dlqops/dlq/internal/kafkaclient"
	"github.com/dlqops/dlq/internal/lifecycle"
	"github.com/dlqops/dlq/internal/store"
	"github.com/dlqops/dlq/internal/store/storetest"
	"github.com/dlqops/dlq/internal/testenv"
	"github.com/dlqops/dlq/internal/testenv/kafkatest"
)

// Every goroutine the runner starts (its slots, the sweeper, the producer's closer and
// event drain) is tracked by its lifecycle: a second Start is refused, and Stop, even two
// at once, returns only once each of them has exited. Here a slot cannot finish its
// batch while the test holds its job's row lock, so neither Stop may return before the
// test lets go; then the job is handed back with its batch settled. Not parallel: goleak compares with the goroutines before the runner.
func TestStopWaitsForEveryGoroutine(t *testing.T) {
	ctx := context.Background()
	st, url := storetest.NewWithURL(t)
	target := kafkatest.CreateTopic(t, testenv.KafkaBootstrap(t), 3, nil)
	jobstest.Park(t, st, "orders", 500)
	job, _, err := st.SubmitJob(ctx, store.JobRequest{JobSpec: store.JobSpec{
		Kind: store.JobReplay, Filter: &store.Filter{OriginalTopic: "orders"}, TargetTopic: target,
		RatePerSecond: 50, ConfirmedCount: 500}}, store.Actor{Name: "ada"})
	require.NoError(t, err)
	conn, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer func() { require.NoError(t, conn.Close(ctx)) }()
	before := goleak.IgnoreCurrent()

	r, err := jobs.New(jobs.Config{Store: st, Kafka: kafkaclient.Config{BootstrapServers: testenv.KafkaBootstrap(t)},
		Routes: jobstest.Routes("orders"), Owner: "w1", Lease: 30 * time.Second, Poll: 20 * time.Millisecond,
		Log: zerolog.Nop()})
	require.NoError(t, err)
	require.NoError(t, r.Start(ctx))
	require.ErrorIs(t, r.Start(ctx), lifecycle.ErrStartedTwice)
	waitProgress(t, st, job.ID)

	// Every way out of a job writes its row: the slot's next heartbeat, or its hand-back,
	// waits for this lock.
	tx, err := conn.Begin(ctx)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, `SELECT 1 FROM jobs WHERE id = $1 FOR UPDATE`, job.ID)
	require.NoError(t, err)
	stopped := make(chan error, 2)
	for range 2 {
		go func() { stopped <- r.Stop(ctx) }()
	}
	select {
	case err := <-stopped:
		t.Fatalf("Stop returned (%v) while a slot was still running", err)
	case <-time.After(2 * time.Second): // a window to watch, not a speed bound
	}
	require.NoError(t, tx.Rollback(ctx))
	for range 2 {
		require.NoError(t, <-stopped)
	}
	goleak.VerifyNone(t, before)
	j, err := st.GetJob(ctx, job.ID)
	require.NoError(t, err)
	require.False(t, j.LeaseUntil.After(time.Now()), "handed back: its lease ended at Stop")
	require.Less(t, j.Done, int64(500))
	replaying, err := st.Count(ctx, store.Filter{Statuses: []store.Status{store.StatusReplaying}})
	require.NoError(t, err)
	require.Zero(t, replaying, "the batch on its way settled before the hand-back")
}
