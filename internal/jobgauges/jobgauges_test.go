package jobgauges_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/dlqops/dlq/internal/jobgauges"
	"github.com/dlqops/dlq/internal/store"
	"github.com/dlqops/dlq/internal/store/storetest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// scrape returns every series of the registry as `name{label="value",…}` → value.
func scrape(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	out := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			var ls []string
			for _, l := range m.GetLabel() {
				ls = append(ls, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
			}
			sort.Strings(ls)
			v := m.GetGauge().GetValue()
			if m.GetCounter() != nil {
				v = m.GetCounter().GetValue()
			}
			out[mf.GetName()+"{"+strings.Join(ls, ",")+"}"] = v
		}
	}
	return out
}

const (
	replayPending  = `dlq_jobs_active{kind="replay",status="pending"}`
	replayRunning  = `dlq_jobs_active{kind="replay",status="running"}`
	discardPending = `dlq_jobs_active{kind="discard",status="pending"}`
	discardRunning = `dlq_jobs_active{kind="discard",status="running"}`
	oldestPending  = `dlq_jobs_oldest_pending_seconds{}`
	stalled        = `dlq_jobs_stalled_seconds{}`
	errorsTotal    = `dlq_jobs_gauge_errors_total{}`
)

// gauged returns a store on a clock the test moves and a registry of its job gauges.
func gauged(t *testing.T) (*store.Store, *storetest.Clock, *prometheus.Registry) {
	t.Helper()
	st, c := storetest.NewClocked(t)
	reg := prometheus.NewRegistry()
	_, err := jobgauges.Register(reg, st, zerolog.Nop())
	require.NoError(t, err)
	return st, c, reg
}

// The gauges follow jobs through their life: pending jobs are counted with their wait, a
// running job's stall grows while heartbeats carry no settled record and starts again at
// each one that does, and a finished job leaves every gauge.
func TestGaugesFollowJobs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, c, reg := gauged(t)

	require.Equal(t, map[string]float64{replayPending: 0, replayRunning: 0, discardPending: 0, discardRunning: 0,
		oldestPending: 0, stalled: 0, errorsTotal: 0}, scrape(t, reg), "every series exists before the first job")

	alice := store.Actor{Name: "alice"}
	bulk, err := st.CreateJob(ctx, store.JobSpec{Kind: store.JobReplay, Filter: &store.Filter{OriginalTopic: "orders"}}, alice)
	require.NoError(t, err)
	c.Advance(30 * time.Second)
	_, err = st.CreateJob(ctx, store.JobSpec{Kind: store.JobDiscard, RecordIDs: []int64{1, 2}}, alice)
	require.NoError(t, err)
	c.Advance(15 * time.Second)
	got := scrape(t, reg)
	require.Equal(t, 1.0, got[replayPending])
	require.Equal(t, 1.0, got[discardPending])
	require.Equal(t, 45.0, got[oldestPending], "the oldest pending job waited 45 s")
	require.Equal(t, 0.0, got[stalled], "nothing runs")

	job, err := st.ClaimJob(ctx, "w1", time.Minute)
	require.NoError(t, err)
	require.Equal(t, bulk.ID, job.ID)
	c.Advance(20 * time.Second)
	got = scrape(t, reg)
	require.Equal(t, 0.0, got[replayPending])
	require.Equal(t, 1.0, got[replayRunning])
	require.Equal(t, 35.0, got[oldestPending], "the discard job waits on")
	require.Equal(t, 20.0, got[stalled], "no record settled since the job started")

	require.NoError(t, st.UpdateJobProgress(ctx, job.ID, "w1", store.JobProgress{Total: 10, Done: 3, Cursor: 3}, time.Minute))
	c.Advance(40 * time.Second)
	require.Equal(t, 40.0, scrape(t, reg)[stalled])
	// Heartbeats that settle nothing (a broker that does not answer) keep the lease, not the gauge.
	for range 3 {
		require.NoError(t, st.UpdateJobProgress(ctx, job.ID, "w1", store.JobProgress{Total: 10, Done: 3, Cursor: 3}, time.Minute))
		c.Advance(time.Minute)
	}
	require.Equal(t, 220.0, scrape(t, reg)[stalled])
	// A failed or skipped record is progress too.
	require.NoError(t, st.UpdateJobProgress(ctx, job.ID, "w1", store.JobProgress{Total: 10, Done: 3, Skipped: 1, Cursor: 4}, time.Minute))
	c.Advance(5 * time.Second)
	require.Equal(t, 5.0, scrape(t, reg)[stalled])
	require.NoError(t, st.UpdateJobProgress(ctx, job.ID, "w1", store.JobProgress{Total: 10, Done: 3, Failed: 1, Skipped: 1, Cursor: 5}, time.Minute))
	c.Advance(7 * time.Second)
	require.Equal(t, 7.0, scrape(t, reg)[stalled])

	_, err = st.FinishJob(ctx, job.ID, "w1", store.JobSucceeded, "")
	require.NoError(t, err)
	got = scrape(t, reg)
	require.Equal(t, 0.0, got[replayRunning])
	require.Equal(t, 0.0, got[stalled], "a finished job is not stalled")
	require.Equal(t, 1.0, got[discardPending])
}

// A job whose runner died keeps its stall: the gauge counts from the last settled record,
// also once another runner takes the job over, until that runner settles one.
func TestStallSurvivesATakeover(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, c, reg := gauged(t)

	job, err := st.CreateJob(ctx, store.JobSpec{Kind: store.JobReplay, Filter: &store.Filter{OriginalTopic: "orders"}}, store.Actor{Name: "alice"})
	require.NoError(t, err)
	_, err = st.ClaimJob(ctx, "w1", time.Minute)
	require.NoError(t, err)
	require.NoError(t, st.UpdateJobProgress(ctx, job.ID, "w1", store.JobProgress{Total: 10, Done: 2, Cursor: 2}, time.Minute))
	c.Advance(3 * time.Minute) // w1 died; its lease ran out
	taken, err := st.ClaimJob(ctx, "w2", time.Minute)
	require.NoError(t, err)
	require.Equal(t, job.ID, taken.ID)
	c.Advance(10 * time.Second)
	require.Equal(t, 190.0, scrape(t, reg)[stalled])
	require.NoError(t, st.UpdateJobProgress(ctx, job.ID, "w2", store.JobProgress{Total: 10, Done: 3, Cursor: 3}, time.Minute))
	require.Equal(t, 0.0, scrape(t, reg)[stalled])
}

// PostgreSQL unreachable: the gauges are left out of the scrape (an alert must not read a
// 0 that nobody measured), the rest of the scrape still answers, and the failure is counted.
func TestGaugesLeftOutWhenTheDatabaseFails(t *testing.T) {
	t.Parallel()
	_, url := storetest.NewWithURL(t)
	st, err := store.Open(context.Background(), url)
	require.NoError(t, err)
	reg := prometheus.NewRegistry()
	_, err = jobgauges.Register(reg, st, zerolog.Nop())
	require.NoError(t, err)
	require.Contains(t, scrape(t, reg), stalled)

	st.Close()
	got := scrape(t, reg)
	require.Equal(t, map[string]float64{errorsTotal: 1}, got)
	require.Equal(t, 2.0, scrape(t, reg)[errorsTotal])
}
