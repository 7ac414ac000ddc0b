package redrive_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/redrive"
	"github.com/dlqops/dlq/internal/store"
	"github.com/dlqops/dlq/internal/store/storetest"
	"github.com/dlqops/dlq/internal/testenv"
	"github.com/dlqops/dlq/internal/testenv/proctest"
)

// A dlq-worker whose confluent-kafka-go is not the release kafkafast was checked against
// (here: a build told by the linker that another release was checked) never reaches
// into the library's internals on read_path queue: it says so and reads and redrives
// through the public API, every record accounted for.
func TestUncheckedReleaseFallsBackToThePublicAPI(t *testing.T) {
	t.Parallel()
	const records, partitions = 500, 2
	dir := t.TempDir()
	build := exec.Command("go", "build", "-o", dir+"/",
		"-ldflags=-X github.com/dlqops/dlq/internal/kafkafast.checkedVersion=v0.0.0-unchecked", "github.com/dlqops/dlq/cmd/dlq-worker")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "%s", out)

	bs := testenv.KafkaBootstrap(t)
	dlq, _ := seedProcessDLQ(t, bs, records, partitions, 64)
	st, dbURL := storetest.NewWithURL(t)
	name := testenv.UniqueName("unchecked-")
	group := "dlq-worker." + name
	cfg := proctest.WorkerConfig{DatabaseURL: dbURL, Bootstrap: bs, Route: name, Topic: dlq, MaxInFlight: 100}.Write(t, t.TempDir())
	logPath := filepath.Join(t.TempDir(), "worker.log")
	w := proctest.Start(t, logPath, []string{"DLQ_WORKER_READ_PATH=" + redrive.ReadPathQueue}, filepath.Join(dir, "dlq-worker"), "run", "--config", cfg)
	waitCommitted(t, committedOffsets(t, bs, dlq, group, partitions), watermarks(t, bs, dlq), 3*time.Minute)
	require.NoError(t, w.Term(workerGrace), "graceful shutdown exits 0; log in %s", logPath)

	rep := requireConserved(t, st, dlq, group)
	require.Equal(t, records, rep.Checked)
	require.Equal(t, records/10, rep.InStore[store.StatusParked])
	require.Equal(t, records*9/10, rep.OnTarget)
	log, err := os.ReadFile(logPath)
	require.NoError(t, err)
	require.Contains(t, string(log), "read_path queue is not available with this build")
	require.Contains(t, string(log), "v0.0.0-unchecked was checked")
	require.NotContains(t, string(log), "records are read and redriven through kafkafast")
}
