package housekeeping_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/housekeeping"
	"github.com/dlqops/dlq/internal/store"
	"github.com/dlqops/dlq/internal/store/storetest"
)

// Records stored before fingerprints existed (NULL fingerprint and template) get theirs
// from the leading worker's housekeeping, the same as a record stored now, so that
// incidents count them: 200 timeouts with varying numbers and ids and 100 parse errors
// with varying positions, 250 of them without a fingerprint, read as 2 incidents of 200
// and 100 after a pass. A second pass fills nothing more.
func TestPassBackfillsFingerprints(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, url := storetest.NewWithURL(t)
	recs := records("orders", store.StatusParked, store.ReasonExhausted, 0, 300)
	for i := range recs {
		if i < 200 {
			recs[i].ErrorClass = "java.net.SocketTimeoutException"
			recs[i].ErrorMessage = fmt.Sprintf("timeout after %d ms calling order ord-%d", 100+i, 5000+i)
		} else {
			recs[i].ErrorClass = "com.fasterxml.jackson.core.JsonParseException"
			recs[i].ErrorMessage = fmt.Sprintf("Unexpected character ('}' (code 125)) at line 1, column %d", i)
		}
	}
	_, err := st.StoreBatch(ctx, recs, nil)
	require.NoError(t, err)
	want, err := st.Incidents(ctx, store.Filter{}, 10)
	require.NoError(t, err)
	require.Len(t, want, 2, "as stored now: two causes")

	// The records as stored before fingerprints existed: 150 timeouts and every parse error.
	pool, err := pgxpool.New(ctx, url)
	require.NoError(t, err)
	defer pool.Close()
	tag, err := pool.Exec(ctx, `UPDATE dead_letters SET fingerprint = NULL, message_template = NULL
		WHERE id IN (SELECT id FROM dead_letters ORDER BY id OFFSET 50)`)
	require.NoError(t, err)
	require.EqualValues(t, 250, tag.RowsAffected())
	before, err := st.Incidents(ctx, store.Filter{}, 10)
	require.NoError(t, err)
	require.Len(t, before, 1)
	require.EqualValues(t, 50, before[0].Parked, "incidents leave out the records without a fingerprint")

	reg := prometheus.NewRegistry()
	h, err := housekeeping.New(housekeeping.Options{Log: zerolog.New(zerolog.NewTestWriter(t)), Store: st, Registry: reg})
	require.NoError(t, err)
	require.True(t, h.Pass(ctx), "alone, it leads")

	got, err := st.Incidents(ctx, store.Filter{}, 10)
	require.NoError(t, err)
	require.Len(t, got, 2)
	for i := range got {
		require.Equal(t, want[i].Fingerprint, got[i].Fingerprint, "the fingerprint a record stored now gets")
		require.Equal(t, want[i].MessageTemplate, got[i].MessageTemplate)
	}
	require.EqualValues(t, 200, got[0].Parked)
	require.EqualValues(t, 100, got[1].Parked)
	var unfilled int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM dead_letters WHERE fingerprint IS NULL OR message_template IS NULL`).Scan(&unfilled))
	require.Zero(t, unfilled)
	filled, ok := value(t, reg, "dlq_worker_fingerprints_backfilled_total", map[string]string{})
	require.True(t, ok)
	require.Equal(t, 250.0, filled)

	require.True(t, h.Pass(ctx))
	filled, _ = value(t, reg, "dlq_worker_fingerprints_backfilled_total", map[string]string{})
	require.Equal(t, 250.0, filled, "a second pass fills nothing")
}
