package jobs_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/audit"
	"github.com/dlqops/dlq/internal/jobs/jobstest"
	"github.com/dlqops/dlq/internal/kafkaclient"
	"github.com/dlqops/dlq/internal/store"
	"github.com/dlqops/dlq/internal/store/storetest"
	"github.com/dlqops/dlq/internal/testenv"
	"github.com/dlqops/dlq/internal/testenv/kafkatest"
	"github.com/dlqops/dlq/internal/testenv/proctest"
)

// The job runner runs in the dlq-worker process: a dlq-worker is killed with SIGKILL in
// the middle of a bulk replay (no shutdown code runs at all), and another one started. The
// second resumes the job once the dead one's lease expires and ends it succeeded: every
// record is replayed and on the topic at least once with its replay id, no row is left
// replaying, the counts add up, and the conservation audit accounts for every record.
func TestKill9RunnerProcessMidJob(t *testing.T) {
	t.Parallel()
	const n = 6000 // 6 s at 1,000/s: the kill lands mid-job even on a loaded machine
	ctx := context.Background()
	bs := testenv.KafkaBootstrap(t)
	st, url := storetest.NewWithURL(t)
	topic := kafkatest.CreateTopic(t, bs, 3, nil)
	jobstest.Park(t, st, topic, n)
	group := jobstest.AuditableDLQ(t, bs, topic, n)
	job, _, err := st.SubmitJob(ctx, store.JobRequest{JobSpec: store.JobSpec{Kind: store.JobReplay,
		Filter: &store.Filter{OriginalTopic: topic}, RatePerSecond: 1000, ConfirmedCount: n}}, store.Actor{Name: "ada"})
	require.NoError(t, err)

	bin := buildWorker(t)
	cfg := workerConfig(t, url, bs, topic)
	first := proctest.Start(t, filepath.Join(t.TempDir(), "first.log"), nil, bin, "run", "--config", cfg)
	waitProgress(t, st, job.ID)
	first.Kill()
	mid, err := st.GetJob(ctx, job.ID)
	require.NoError(t, err)
	require.Equal(t, store.JobRunning, mid.Status, "killed mid-job")
	require.Less(t, mid.Done, int64(n))

	proctest.Start(t, filepath.Join(t.TempDir(), "second.log"), nil, bin, "run", "--config", cfg)
	job = waitJob(t, st, job.ID)
	require.Equal(t, store.JobSucceeded, job.Status, job.Error)
	require.EqualValues(t, n, job.Done)
	require.Equal(t, job.Total, job.Done+job.Failed+job.Skipped)
	left, err := st.Count(ctx, store.Filter{Statuses: []store.Status{store.StatusReplaying}})
	require.NoError(t, err)
	require.Zero(t, left, "no row left replaying")
	msgs := jobstest.Consume(t, topic, 3, n)
	require.Len(t, jobstest.CheckReplayed(t, st, msgs, job.ID, "ada", false), n, "every record on the topic")
	t.Logf("%d copies of %d records: %d produced again after the kill, with their replay id", len(msgs), n, len(msgs)-n)

	rep, err := audit.Run(ctx, kafkaclient.Config{BootstrapServers: bs}, st, topic+".dlq", group)
	require.NoError(t, err)
	require.True(t, rep.OK(), rep.String())
	require.Equal(t, n, rep.Checked)
	require.Equal(t, n, rep.InStore[store.StatusReplayed], rep.String())
}

// buildWorker builds the dlq-worker binary (without -race: it is the system under test)
// into the test's temporary folder.
func buildWorker(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, proctest.Build(dir, "github.com/dlqops/dlq/cmd/dlq-worker"))
	return filepath.Join(dir, "dlq-worker")
}

// workerConfig is a dlq-worker configuration whose route is named route (as Park names
// it) and reads an empty DLQ topic of its own: the process only runs jobs.
func workerConfig(t *testing.T, dbURL, bootstrap, route string) string {
	t.Helper()
	idle := kafkatest.CreateTopic(t, bootstrap, 1, nil)
	path := filepath.Join(t.TempDir(), "worker.yaml")
	require.NoError(t, os.WriteFile(path, []byte(fmt.Sprintf(`log: {level: info, format: json}
http: {listen: "127.0.0.1:0"}
database: {url: %q}
kafka: {bootstrap_servers: %q}
routes:
  - name: %s
    topics: [%s]
    schedule: "@every 1h"
    backoff: none
`, dbURL, bootstrap, route, idle)), 0o600))
	return path
}
