package redrive_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/redrive"
	"github.com/dlqops/dlq/internal/store"
	"github.com/dlqops/dlq/internal/store/storetest"
	"github.com/dlqops/dlq/internal/testenv"
	"github.com/dlqops/dlq/internal/testenv/kafkatest"
	"github.com/dlqops/dlq/internal/testenv/metrictest"
)

// windowStart is the window past the ledger's position of a newly assigned partition.
const windowStart = 256

// A new life takes at most windowStart records per partition past the ledger's position
// until a ledger write lands: while no position can be written, the worker fills a
// window and waits with nothing in flight (a kill now costs at most those records).
// Once the ledger answers, the window widens, the run finishes, and every record is
// accounted for, none redriven twice.
func TestNewLifeWaitsForTheLedgerPastItsWindow(t *testing.T) {
	t.Parallel()
	const n = 2000 // over 2 partitions
	ctx := context.Background()
	bs := testenv.KafkaBootstrap(t)
	st, url := storetest.NewWithURL(t)
	reg := prometheus.NewRegistry()
	dlq := kafkatest.CreateTopic(t, bs, 2, nil)
	target := kafkatest.CreateTopic(t, bs, 2, nil)
	rc := route(testenv.UniqueName("window-"), dlq)
	produce(t, dlq, dueRecords("w", n, target)...)

	// The ledger knows both partitions (nothing to adopt at the assignment), and a
	// position that moves waits for an advisory lock this test holds.
	require.NoError(t, st.AdvanceLedgerPositions(ctx, rc.Group, []store.Coordinates{{Topic: dlq, Partition: 0}, {Topic: dlq, Partition: 1}}))
	key := rand.Int64()
	hold, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	t.Cleanup(func() { _ = hold.Close(context.Background()) })
	for _, q := range []string{
		fmt.Sprintf(`CREATE FUNCTION hold_positions() RETURNS trigger LANGUAGE plpgsql AS $$
			BEGIN PERFORM pg_advisory_xact_lock(%d); RETURN NEW; END $$`, key),
		`CREATE TRIGGER hold_positions BEFORE UPDATE ON ledger_positions FOR EACH ROW
			WHEN (NEW.committed_offset > OLD.committed_offset) EXECUTE FUNCTION hold_positions()`,
		fmt.Sprintf(`SELECT pg_advisory_lock(%d)`, key),
	} {
		_, err := hold.Exec(ctx, q)
		require.NoError(t, err, q)
	}

	e := startEngineWith(t, redrive.Options{Store: st, Kafka: kcfg(t), Registry: reg}, rc)
	waitAssigned(t, bs, rc.Group, 1, 2)
	run := runInBackground(e, rc.Name)
	blocked := func() bool { // a position write waits for the lock
		var waiting int
		err := hold.QueryRow(ctx, `SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted
			AND (classid::bigint << 32 | objid::bigint) = $1`, key).Scan(&waiting)
		return err == nil && waiting > 0
	}
	route := map[string]string{"route": rc.Name}
	var redriven, inFlight float64
	var waiting bool
	if !assert.Eventually(t, func() bool {
		waiting = blocked()
		redriven = metrictest.Sum(t, reg, "dlq_worker_redriven_total", route)
		inFlight = metrictest.Sum(t, reg, "dlq_worker_in_flight", route)
		return waiting && redriven >= windowStart && inFlight == 0
	}, time.Minute, 20*time.Millisecond) {
		t.Fatalf("the worker never waited for the ledger with nothing in flight: write waiting %v, %v redriven, %v in flight", waiting, redriven, inFlight)
	}
	// The first partition to fill its window holds the others back too.
	perPartition := map[int32]int{}
	got := readAll(t, target)
	for _, m := range got {
		perPartition[redriveID(t, m).Partition]++
	}
	require.LessOrEqual(t, perPartition[0], windowStart, "partition 0 past its window: %v", perPartition)
	require.LessOrEqual(t, perPartition[1], windowStart, "partition 1 past its window: %v", perPartition)
	require.Equal(t, windowStart, max(perPartition[0], perPartition[1]), "a full window: %v", perPartition)
	require.Equal(t, float64(len(got)), metrictest.Sum(t, reg, "dlq_worker_redriven_total", route), "still waiting")

	_, err = hold.Exec(ctx, fmt.Sprintf(`SELECT pg_advisory_unlock(%d)`, key))
	require.NoError(t, err)
	requireResumed(t, run, "the ledger answering")
	rep := requireConserved(t, st, dlq, rc.Group)
	require.Equal(t, n, rep.OnTarget)
	require.Empty(t, rep.Duplicated, "nothing redriven twice")
}
