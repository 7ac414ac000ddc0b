package console_test

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/net/html"

	"github.com/dlqops/dlq/internal/api"
)

// The audit page shows a bulk job's hundreds of batch rows as one entry, with a link to
// them one by one; with batches=show it shows every row, each linking to its first
// record ids and counting the rest.
func TestAuditPageFoldsAJobsBatchRows(t *testing.T) {
	at := time.Now().Add(-time.Hour).UTC()
	ids := make([]int64, 100)
	for i := range ids {
		ids[i] = int64(i + 1)
	}
	entries := []api.AuditEntry{{ID: 500, At: at, Actor: "ada", Action: "finish_job", JobID: 3, Outcome: "ok", Affected: 20000}}
	for i := range 200 {
		action := "finish_replay"
		if i%2 == 1 {
			action = "begin_replay"
		}
		entries = append(entries, api.AuditEntry{ID: int64(499 - i), At: at, Actor: "ada", Action: action, JobID: 3, Outcome: "ok",
			RecordIDs: ids, Affected: 100})
	}
	entries = append(entries, api.AuditEntry{ID: 299, At: at, Actor: "otto", Action: "discard", RecordIDs: []int64{7}, Outcome: "ok", Affected: 1})
	var asked []string
	fake := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked = append(asked, r.URL.RawQuery)
		require.NoError(t, json.NewEncoder(w).Encode(api.AuditList{Entries: entries}))
	})
	page := signedInConsole(t, fake)

	count := func(doc *html.Node, class string) int {
		n := 0
		walk(doc, func(x *html.Node) {
			if x.Type == html.ElementNode && attr(x, "class") == class {
				n++
			}
		})
		return n
	}
	doc := page("/ui/audit")
	require.Equal(t, 2, count(doc, "audit-row"), "the job's finish row and the discard")
	require.Equal(t, 1, count(doc, "audit-fold"), "200 batch rows, one entry")
	var fold *html.Node
	walk(doc, func(x *html.Node) {
		if x.Type == html.ElementNode && attr(x, "class") == "audit-fold" {
			fold = x
		}
	})
	require.Contains(t, textOf(fold), "finish_replay ×100, begin_replay ×100")
	require.Contains(t, textOf(fold), "10,000, 10,000")
	require.Contains(t, textOf(fold), "200 batch rows")
	require.Contains(t, byID(t, doc, "batch-toggle"), "Show every batch row")

	doc = page("/ui/audit?batches=show")
	require.Equal(t, 202, count(doc, "audit-row"))
	require.Equal(t, 0, count(doc, "audit-fold"))
	require.Equal(t, 200, count(doc, "more-ids"), "each batch row links to its first ids and counts the rest")
	require.NotContains(t, asked[len(asked)-1], "batches", "the API is asked for the same entries either way")

	doc = page("/ui/audit?job_id=3")
	require.Equal(t, 0, count(doc, "audit-fold"), "a view of one job's entries shows each")
	require.Equal(t, 202, count(doc, "audit-row"))
}
