package console

import (
	"slices"
	"time"
)

// A bulk job writes an audit row per batch (a begin and a finish per replayed batch, one
// per discarded batch): a job of 10k records is hundreds of rows that bury everything
// else on the audit page. The page folds them: a job's consecutive batch rows are one
// entry saying how many there are, what they did and how many records they touched,
// with a link to the job's rows shown one by one.

// batchActions are the audit actions a job writes once per batch.
var batchActions = map[string]bool{"begin_replay": true, "finish_replay": true, "abort_replay": true, "discard": true}

// isBatchRow reports whether e is one batch of a job that went through; a refused or
// failed one is never folded away.
func isBatchRow(e auditRow) bool {
	return e.JobID != 0 && batchActions[e.Action] && e.Outcome == "ok"
}

// auditItem is one row of the audit page: an entry as it is, or a job's batch rows folded.
type auditItem struct {
	Entry *auditRow
	Fold  *batchFold
}

// batchFold is a run of consecutive batch rows of one job, newest first.
type batchFold struct {
	JobID    int64
	Rows     int
	Actions  []actionCount // in the order first met
	Newest   time.Time
	Oldest   time.Time
	Actors   []string
	NewestID int64
	OldestID int64
	// Batches are the folded rows, shown in place when the fold is opened.
	Batches []auditRow
}

// actionCount is one action of a fold: how many rows, and the records they affected (a
// replayed record is in a begin and in a finish row: the actions are counted apart).
type actionCount struct {
	Action   string
	Count    int
	Affected int64
}

// foldBatches folds each run of two or more consecutive batch rows of the same job into
// one item; every other entry stays an item of its own, in the same order.
func foldBatches(entries []auditRow) []auditItem {
	var out []auditItem
	for i := 0; i < len(entries); {
		e := &entries[i]
		j := i + 1
		if isBatchRow(*e) {
			for j < len(entries) && isBatchRow(entries[j]) && entries[j].JobID == e.JobID {
				j++
			}
		}
		if j-i < 2 {
			out = append(out, auditItem{Entry: e})
			i++
			continue
		}
		f := &batchFold{JobID: e.JobID, Rows: j - i, Newest: e.At, NewestID: e.ID, Oldest: entries[j-1].At, OldestID: entries[j-1].ID,
			Batches: entries[i:j]}
		for _, b := range entries[i:j] {
			k := slices.IndexFunc(f.Actions, func(a actionCount) bool { return a.Action == b.Action })
			if k < 0 {
				f.Actions = append(f.Actions, actionCount{Action: b.Action})
				k = len(f.Actions) - 1
			}
			f.Actions[k].Count++
			f.Actions[k].Affected += b.Affected
			if !slices.Contains(f.Actors, b.Actor) {
				f.Actors = append(f.Actors, b.Actor)
			}
		}
		out = append(out, auditItem{Fold: f})
		i = j
	}
	return out
}

// shownIDs is how many record ids an audit row links to; the rest are counted.
const shownIDs = 10

// firstIDs are the ids an audit row links to: of an api.AuditEntry's []int64 (a record's
// history) or of the audit page's shownRecordIDs.
func firstIDs(ids any) []int64 {
	switch v := ids.(type) {
	case []int64:
		return v[:min(len(v), shownIDs)]
	case shownRecordIDs:
		return v.First
	}
	return nil
}

// moreIDs is how many ids of an audit row are counted, not linked.
func moreIDs(ids any) int {
	switch v := ids.(type) {
	case []int64:
		return max(0, len(v)-shownIDs)
	case shownRecordIDs:
		return v.Total - len(v.First)
	}
	return 0
}
