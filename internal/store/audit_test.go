package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/store"
	"github.com/dlqops/dlq/internal/store/storetest"
)

// An audit row keeps its records as runs of consecutive ids (migration 00016): a record's
// history finds every row that names it, gaps and duplicates included, and no row that
// does not.
func TestHistoryFindsEachRecordOfARowByItsRuns(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, pool := auditStore(t,
		store.AuditEntry{At: auditAt, Actor: "ada", Action: "finish_replay", RecordIDs: []int64{7, 1, 2, 3, 3, 12}, Affected: 5, Outcome: "ok"},
		store.AuditEntry{At: auditAt, Actor: "ada", Action: "discard", RecordIDs: []int64{9}, Affected: 1, Outcome: "ok"},
		store.AuditEntry{At: auditAt, Actor: "ada", Action: "pause_route", Route: "r", Outcome: "ok"})
	var runs string
	require.NoError(t, pool.QueryRow(ctx, `SELECT record_ranges::text FROM audit_log WHERE action = 'finish_replay'`).Scan(&runs))
	require.Equal(t, "{[1,4),[7,8),[12,13)}", runs)
	history := func(id int64) []string {
		entries, err := s.SearchAudit(ctx, store.AuditFilter{RecordID: id}, 0, 10)
		require.NoError(t, err)
		var out []string
		for _, e := range entries {
			out = append(out, e.Action)
		}
		return out
	}
	for _, id := range []int64{1, 2, 3, 7, 12} {
		require.Equal(t, []string{"finish_replay"}, history(id), "record %d", id)
	}
	require.Equal(t, []string{"discard"}, history(9))
	for _, id := range []int64{4, 6, 8, 11, 13} {
		require.Empty(t, history(id), "record %d", id)
	}
}

// A row whose ids ascend keeps them only as their runs (record_ids NULL): a job's batch
// of a thousand records is a few bytes instead of a compressed 8 KB array. The listing
// reads every id back in order, and a row whose ids do not ascend keeps them as given.
func TestAscendingIDsAreKeptAsTheirRuns(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var batch []int64
	for id := int64(1); id <= 1000; id++ {
		if id%7 != 0 { // a few skipped, as a job's batch has them
			batch = append(batch, id)
		}
	}
	s, pool := auditStore(t,
		store.AuditEntry{At: auditAt, Actor: "ada", Action: "finish_replay", RecordIDs: batch, Affected: int64(len(batch)), Outcome: "ok"},
		store.AuditEntry{At: auditAt, Actor: "ada", Action: "create_replay_job", RecordIDs: []int64{12, 3, 3}, Outcome: "ok"},
		store.AuditEntry{At: auditAt, Actor: "ada", Action: "pause_route", Route: "r", Outcome: "ok"})
	var stored int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM audit_log WHERE record_ids IS NOT NULL`).Scan(&stored))
	require.Equal(t, 1, stored, "only the row whose ids do not ascend keeps its array")
	entries, err := s.ListAudit(ctx, 0, 10)
	require.NoError(t, err)
	require.Len(t, entries, 3)
	require.Nil(t, entries[0].RecordIDs)
	require.Equal(t, []int64{12, 3, 3}, entries[1].RecordIDs)
	require.Equal(t, batch, entries[2].RecordIDs)
}

var auditAt = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// auditStore is a fresh store holding entries in its audit log, and a pool on its schema
// to read audit_log's columns directly.
func auditStore(t *testing.T, entries ...store.AuditEntry) (*store.Store, *pgxpool.Pool) {
	t.Helper()
	ctx := context.Background()
	s, url := storetest.NewWithURL(t)
	pool, err := pgxpool.New(ctx, url)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	for _, e := range entries {
		require.NoError(t, s.Audit(ctx, e))
	}
	return s, pool
}
