package console_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/api"
	"github.com/dlqops/dlq/internal/store"
)

// A job's folded batch rows open in place on the audit page (a <details>, no script),
// and the link to the job's rows one by one stays.
func TestAuditFoldExpandsInPlace(t *testing.T) {
	e := newEnv(t)
	ids := e.park("FoldErr", e.orders, 12)
	n := int64(len(ids))
	apiPost(t, e.url, "/v1/bulk/discard", api.BulkRequest{IDs: ids, ConfirmCount: &n, Reason: "fold check"})
	discarded := store.Filter{ErrorClass: "FoldErr", Statuses: []store.Status{store.StatusDiscarded}}
	require.Eventually(t, func() bool { return e.count(discarded) == n }, 2*time.Minute, 100*time.Millisecond)

	ctx := e.tab(t)
	e.signIn(t, ctx, viewerToken)
	do(t, ctx, chromedp.Navigate(e.url+"/ui/audit"), chromedp.WaitVisible("#audit tr.audit-fold"))
	fold := "#audit tr.audit-fold-batches"
	require.Equal(t, 1, eval[int](t, ctx, `document.querySelectorAll("#audit tr.audit-fold").length`))
	require.True(t, eval[bool](t, ctx, `!!document.querySelector("#audit tr.audit-fold a.show-job-batches") && !!document.querySelector("#show-batches")`),
		"the links to every batch row stay")
	batchRows := fold + " tr.audit-batch-row"
	require.Equal(t, 3, eval[int](t, ctx, fmt.Sprintf(`document.querySelectorAll(%q).length`, batchRows)), "12 records in batches of 5")
	visible := fmt.Sprintf(`Array.from(document.querySelectorAll(%q)).filter(r => r.checkVisibility()).length`, batchRows)
	require.Equal(t, 0, eval[int](t, ctx, visible), "folded until opened")
	do(t, ctx, chromedp.Click(fold+" summary"), chromedp.WaitVisible(batchRows))
	require.Equal(t, 3, eval[int](t, ctx, visible), "opened in place")
	require.Equal(t, []string{"discard", "discard", "discard"},
		eval[[]string](t, ctx, fmt.Sprintf(`Array.from(document.querySelectorAll(%q)).map(c => c.textContent)`, batchRows+" .audit-action")))
	require.Equal(t, "/ui/audit", eval[string](t, ctx, `location.pathname + location.search`), "no navigation")
	e.shot(t, ctx, "audit-fold-open")
}
