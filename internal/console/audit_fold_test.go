package console

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/api"
)

// A job's consecutive batch rows fold into one item that counts them; anything else (a
// lone batch row, another job's rows, a refused batch, a job's create and finish rows)
// stays an item of its own, in order.
func TestFoldBatches(t *testing.T) {
	at := time.Date(2026, 3, 10, 16, 0, 0, 0, time.UTC)
	var entries []auditRow
	add := func(action string, job int64, outcome string, ids ...int64) {
		entries = append(entries, auditRow{AuditEntry: api.AuditEntry{ID: int64(100 - len(entries)), At: at.Add(-time.Duration(len(entries)) * time.Second),
			Actor: "ada", Action: action, JobID: job, Outcome: outcome, Affected: int64(len(ids))},
			RecordIDs: shownRecordIDs{First: ids, Total: len(ids)}})
	}
	add("finish_job", 7, "ok")
	for range 3 {
		add("finish_replay", 7, "ok", 1, 2)
		add("begin_replay", 7, "ok", 1, 2)
	}
	add("begin_replay", 7, "conflict", 9)
	add("discard", 8, "ok", 5)
	add("discard", 0, "ok", 6)
	add("discard", 8, "ok", 7)
	add("discard", 8, "ok", 8)
	add("create_replay_job", 7, "ok")

	items := foldBatches(entries)
	require.Len(t, items, 7)
	require.Equal(t, "finish_job", items[0].Entry.Action)
	f := items[1].Fold
	require.NotNil(t, f)
	require.Equal(t, &batchFold{JobID: 7, Rows: 6, Actions: []actionCount{{"finish_replay", 3, 6}, {"begin_replay", 3, 6}},
		Newest: entries[1].At, Oldest: entries[6].At, Actors: []string{"ada"}, NewestID: entries[1].ID, OldestID: entries[6].ID,
		Batches: entries[1:7]}, f)
	require.Equal(t, "conflict", items[2].Entry.Outcome, "a refused batch stays in sight")
	require.Equal(t, int64(8), items[3].Entry.JobID, "one batch row alone is not folded")
	require.Equal(t, int64(0), items[4].Entry.JobID)
	require.Equal(t, 2, items[5].Fold.Rows)
	require.Equal(t, "create_replay_job", items[6].Entry.Action)
}

func TestAuditRowsLinkTheFirstIDs(t *testing.T) {
	ids := make([]int64, 25)
	require.Len(t, firstIDs(ids), shownIDs)
	require.Equal(t, 15, moreIDs(ids))
	require.Len(t, firstIDs(ids[:3]), 3)
	require.Equal(t, 0, moreIDs(ids[:3]))

	// The audit page reads the first ids of the API's answer and counts the rest.
	var row auditRow
	require.NoError(t, json.Unmarshal([]byte(`{"id":9,"action":"finish_replay","record_ids":[1, 2,3,4,5,6,7,8,9,10,11,12]}`), &row))
	require.Equal(t, []int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, firstIDs(row.RecordIDs))
	require.Equal(t, 2, moreIDs(row.RecordIDs))
	require.Equal(t, "finish_replay", row.Action)
	for raw, want := range map[string]shownRecordIDs{`null`: {}, `[]`: {}, `[7]`: {First: []int64{7}, Total: 1}} {
		var s shownRecordIDs
		require.NoError(t, json.Unmarshal([]byte(raw), &s), raw)
		require.Equal(t, want, s, raw)
	}
	for _, raw := range []string{`[1,,2]`, `["1"]`, `{}`, `[1,]`} {
		var s shownRecordIDs
		require.Error(t, json.Unmarshal([]byte(raw), &s), raw)
	}
}
