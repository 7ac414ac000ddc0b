package jobs_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/jobs"
	"github.com/dlqops/dlq/internal/jobs/jobstest"
	"github.com/dlqops/dlq/internal/store"
	"github.com/dlqops/dlq/internal/store/storetest"
	"github.com/dlqops/dlq/internal/testenv"
	"github.com/dlqops/dlq/internal/testenv/kafkatest"
)

// A bulk replay of parked and scheduled records stops before the end, by a cancel while
// its runner works and by a cancel while its runner is dead (the sweeper returns the
// leases): every record it did not produce is back in the status it had, a scheduled one
// with its due time, and none is left replaying.
func TestUnsentRecordsGoBackWhereTheyWere(t *testing.T) {
	t.Parallel()
	for _, dies := range []bool{false, true} {
		name := "cancelled"
		if dies {
			name = "runner dead, swept"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			const n = 3000
			ctx := context.Background()
			st, url := storetest.NewWithURL(t)
			target := kafkatest.CreateTopic(t, testenv.KafkaBootstrap(t), 3, nil)
			jobstest.Park(t, st, "orders", n)
			// Even ids wait on their backoff (scheduled a day ahead), odd ones are parked.
			due := time.Now().Add(24 * time.Hour).UTC().Truncate(time.Millisecond)
			conn, err := pgx.Connect(ctx, url)
			require.NoError(t, err)
			defer conn.Close(ctx)
			_, err = conn.Exec(ctx, `UPDATE dead_letters SET status = 'scheduled', reason = 'backoff', due_at = $1 WHERE id % 2 = 0`, due)
			require.NoError(t, err)

			job, _, err := st.SubmitJob(ctx, store.JobRequest{JobSpec: store.JobSpec{Kind: store.JobReplay,
				Filter:      &store.Filter{OriginalTopic: "orders", Statuses: []store.Status{store.StatusParked, store.StatusScheduled}},
				TargetTopic: target, RatePerSecond: 500, ConfirmedCount: n}}, store.Actor{Name: "ada"})
			require.NoError(t, err)
			const lease = 2 * time.Second
			if dies {
				doomed := jobstest.StartRunner(t, jobs.Config{Store: st, Routes: jobstest.Routes("orders"), Owner: "doomed", Lease: lease})
				waitReplaying(t, st)
				jobstest.Abandon(t, doomed)
				_, err = st.CancelJob(ctx, job.ID, store.Actor{Name: "ada"})
				require.NoError(t, err)
				startRunner(t, st, "sweeper", lease, jobstest.Route("orders"))
			} else {
				startRunner(t, st, "w1", lease, jobstest.Route("orders"))
				waitReplaying(t, st)
				_, err = st.CancelJob(ctx, job.ID, store.Actor{Name: "ada"})
				require.NoError(t, err)
			}
			require.Eventually(t, func() bool {
				left, err := st.Count(ctx, store.Filter{Statuses: []store.Status{store.StatusReplaying}})
				require.NoError(t, err)
				return left == 0
			}, time.Minute, 20*time.Millisecond, "records left replaying")

			var replayed, back int64
			for id := int64(1); id <= n; id++ {
				rec, err := st.Get(ctx, id)
				require.NoError(t, err)
				if rec.Status == store.StatusReplayed {
					replayed++
					continue
				}
				back++
				if id%2 == 0 {
					require.Equal(t, store.StatusScheduled, rec.Status, "record %d was scheduled", id)
					require.Equal(t, due, rec.DueAt.UTC(), "record %d keeps its due time", id)
					require.Equal(t, store.ReasonBackoff, rec.Reason)
				} else {
					require.Equal(t, store.StatusParked, rec.Status, "record %d was parked", id)
					require.Equal(t, store.ReasonExhausted, rec.Reason)
				}
			}
			require.Positive(t, back, "the job stopped before the end")
			require.GreaterOrEqual(t, jobstest.Records(t, target), replayed, "every replayed record is on the target")
		})
	}
}

// waitReplaying waits until some record is leased for replay.
func waitReplaying(t *testing.T, st *store.Store) {
	t.Helper()
	require.Eventually(t, func() bool {
		left, err := st.Count(context.Background(), store.Filter{Statuses: []store.Status{store.StatusReplaying}})
		require.NoError(t, err)
		return left > 0
	}, time.Minute, time.Millisecond)
}
