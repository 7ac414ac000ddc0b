package redrive_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/redrive"
	"github.com/dlqops/dlq/internal/store"
	"github.com/dlqops/dlq/internal/store/storetest"
	"github.com/dlqops/dlq/internal/testenv"
	"github.com/dlqops/dlq/internal/testenv/kafkatest"
)

// The end of a run is one PostgreSQL transaction: the ledger row of each partition it
// read and the run's finish commit together (they were a transaction each), and the
// offsets are committed only after it, at the ledger's positions.
func TestRunEndsInOneTransaction(t *testing.T) {
	t.Parallel()
	const n = 40 // over 2 partitions
	ctx := context.Background()
	bs := testenv.KafkaBootstrap(t)
	st, url := storetest.NewWithURL(t)
	dlq := kafkatest.CreateTopic(t, bs, 2, nil)
	target := kafkatest.CreateTopic(t, bs, 2, nil)
	rc := route(testenv.UniqueName("runend-"), dlq)
	produce(t, dlq, dueRecords("e", n, target)...)

	// Each ledger row and the run's finish note the transaction that wrote them.
	conn, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	for _, q := range []string{
		`CREATE TABLE end_writes (what text NOT NULL, xid bigint NOT NULL)`,
		`CREATE FUNCTION note_end() RETURNS trigger LANGUAGE plpgsql AS $$
			BEGIN INSERT INTO end_writes VALUES (TG_ARGV[0], txid_current()); RETURN NULL; END $$`,
		`CREATE TRIGGER note_ledger AFTER INSERT ON run_ledger FOR EACH ROW EXECUTE FUNCTION note_end('ledger')`,
		`CREATE TRIGGER note_finish AFTER UPDATE ON redrive_runs FOR EACH ROW
			WHEN (OLD.finished_at IS NULL AND NEW.finished_at IS NOT NULL) EXECUTE FUNCTION note_end('finish')`,
	} {
		_, err := conn.Exec(ctx, q)
		require.NoError(t, err, q)
	}

	e := startEngineWith(t, redrive.Options{Store: st, Kafka: kcfg(t)}, rc)
	waitAssigned(t, bs, rc.Group, 1, 2)
	runNow(t, e, rc.Name)

	var ledgerRows, finishes, transactions int
	require.NoError(t, conn.QueryRow(ctx, `SELECT count(*) FILTER (WHERE what = 'ledger'), count(*) FILTER (WHERE what = 'finish'),
		count(DISTINCT xid) FROM end_writes`).Scan(&ledgerRows, &finishes, &transactions))
	require.Equal(t, 2, ledgerRows, "a ledger row per partition read")
	require.Equal(t, 1, finishes, "the run finished once")
	require.Equal(t, 1, transactions, "the ledger rows and the finish in one transaction")

	// The commit followed the ledger: the group's offsets are the ledger's positions.
	positions, err := st.LedgerPositions(ctx, rc.Group)
	require.NoError(t, err)
	require.ElementsMatch(t, []store.Coordinates{{Topic: dlq, Partition: 0, Offset: n / 2}, {Topic: dlq, Partition: 1, Offset: n / 2}}, positions)
	require.Equal(t, map[int32]int64{0: n / 2, 1: n / 2}, committedOffsets(t, bs, dlq, rc.Group, 2)())
	rep := requireConserved(t, st, dlq, rc.Group)
	require.Equal(t, n, rep.OnTarget)
}
