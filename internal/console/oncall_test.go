package console_test

import (
	"fmt"
	"strconv"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/api"
	"github.com/dlqops/dlq/internal/store"
)

// TestConsoleOnCall drives what an on-call engineer does in a hurry: tick records for a
// bulk job, tell a success from a refusal at a glance, not be offered a bulk job of
// nothing. Each subtest parks the records it selects by error class.
func TestConsoleOnCall(t *testing.T) {
	e := newEnv(t)

	t.Run("SelectedRowsMakeABulkJobByIDs", func(t *testing.T) {
		e := e.sub(t)
		ids := e.park("PickErr", e.orders, 5)
		picked := []int64{ids[1], ids[3]}
		ctx := e.tab(t)
		e.signIn(t, ctx, adminToken)
		visit(t, ctx, e.url+"/ui/records?error_class=PickErr", "#bulk")
		for _, id := range picked {
			do(t, ctx, chromedp.Click(fmt.Sprintf(`tr.record-row[data-id="%d"] input.select-record`, id)))
		}
		do(t, ctx, chromedp.Click("#bulk summary"), chromedp.WaitVisible("#bulk-dry-run"),
			chromedp.Click("#bulk-discard"), chromedp.SendKeys("#bulk-reason", "picked by hand"))
		submit(t, ctx, "#bulk-dry-run", "#bulk-count")
		require.Equal(t, "2", text(t, ctx, "#bulk-count"), "the dry run counts the ticked records, not the filter's five")
		require.Equal(t, "2", text(t, ctx, "#bulk-selected"))
		require.Equal(t, int64(5), e.count(store.Filter{ErrorClass: "PickErr", Statuses: []store.Status{store.StatusParked}}),
			"a dry run changes nothing")
		do(t, ctx, chromedp.SendKeys("#confirm-count", "2"))
		submit(t, ctx, "#confirm", "#job-status")
		waitJobPage(t, ctx, "succeeded")
		for i, id := range ids {
			want := store.StatusParked
			if id == picked[0] || id == picked[1] {
				want = store.StatusDiscarded
			}
			require.Equal(t, want, e.status(id), "record %d (%d)", i, id)
		}
	})

	t.Run("SuccessAndRefusalBannersDiffer", func(t *testing.T) {
		e := e.sub(t)
		ids := e.park("BannerErr", e.orders, 2)
		ctx := e.tab(t)
		e.signIn(t, ctx, operatorToken)
		visit(t, ctx, e.url+"/ui/records/"+strconv.FormatInt(ids[0], 10), "#discard-form")
		do(t, ctx, chromedp.SendKeys("#discard-reason", "duplicate"))
		submit(t, ctx, "#discard", "#flash")
		require.Equal(t, "Record discarded.", text(t, ctx, "#flash"))
		ok := eval[[]string](t, ctx, `(() => { const f = document.querySelector("#flash"); return [f.getAttribute("role"), getComputedStyle(f).backgroundColor]; })()`)
		require.Equal(t, "status", ok[0], "a success is announced politely")

		// The record is discarded elsewhere while the page is open: the replay is refused.
		visit(t, ctx, e.url+"/ui/records/"+strconv.FormatInt(ids[1], 10), "#replay-form")
		apiPost(t, e.url, fmt.Sprintf("/v1/records/%d/discard", ids[1]), api.DiscardRequest{Reason: "meanwhile"})
		submit(t, ctx, "#replay", "#flash")
		require.Contains(t, text(t, ctx, "#flash"), "Refused (409")
		refused := eval[[]string](t, ctx, `(() => { const f = document.querySelector("#flash"); return [f.getAttribute("role"), getComputedStyle(f).backgroundColor]; })()`)
		require.Equal(t, "alert", refused[0], "a refusal is an alert")
		require.NotEqual(t, ok[1], refused[1], "in another colour than a success")
	})

	t.Run("EmptyResultOffersNoBulkJob", func(t *testing.T) {
		e := e.sub(t)
		e.park("NotEmptyErr", e.orders, 1)
		ctx := e.tab(t)
		e.signIn(t, ctx, adminToken)
		visit(t, ctx, e.url+"/ui/records?error_class=NotEmptyErr", "#bulk")
		visit(t, ctx, e.url+"/ui/records?error_class=NoSuchErr", "#no-records")
		require.Equal(t, 0, eval[int](t, ctx, `document.querySelectorAll("#bulk, #bulk-form").length`),
			"nothing matches: no bulk job is offered")
	})
}
