package console_test

import (
	"fmt"
	"net/url"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/fingerprint"
	"github.com/dlqops/dlq/internal/store"
)

// The incidents page in headless Chromium, and the overview's top incidents: one row per cause with its counts and its
// template, the senders' text shown as text, each row linking to its records and to a
// bulk job whose dry run counts exactly that incident; viewers get no bulk link, and a
// token scoped to topics sees only its topics' incidents.
func TestIncidentsPage(t *testing.T) {
	e := newEnv(t)
	e.park("IncidentTimeout", e.orders, 6, func(i int, r *store.NewRecord) {
		r.ErrorMessage = fmt.Sprintf("timeout after %d ms for order ord-%d", 100*i+7, 5000+i)
	})
	evilMessage := func(i int) string { return fmt.Sprintf("%s at offset %d", hostileError, i) }
	e.park(hostileClass, e.orders, 3, func(i int, r *store.NewRecord) { r.ErrorMessage = evilMessage(i) })
	e.park("IncidentOther", e.other, 2)
	timeoutFP := fingerprint.Of("IncidentTimeout", "timeout after <n> ms for order <id>", e.orders)
	evilFP := fingerprint.Of(hostileClass, fingerprint.Template(evilMessage(0)), e.orders)
	otherFP := fingerprint.Of("IncidentOther", "downstream timed out", e.other)
	row := func(fp string) string { return fmt.Sprintf(`tr.incident-row[data-fingerprint=%q]`, fp) }

	ctx := e.tab(t)
	e.signIn(t, ctx, adminToken)
	visit(t, ctx, e.url+"/ui/incidents", "#incidents")
	e.shot(t, ctx, "incidents")
	require.Equal(t, "6", text(t, ctx, row(timeoutFP)+" td.parked"))
	require.Equal(t, "timeout after <n> ms for order <id>", text(t, ctx, row(timeoutFP)+" .template"))
	require.Equal(t, "3", text(t, ctx, row(evilFP)+" td.parked"))
	require.Equal(t, hostileClass, text(t, ctx, row(evilFP)+" .cls"), "the class is text, not markup")
	require.Contains(t, text(t, ctx, row(evilFP)+" .template"), "<script>", "the message is text, not markup")
	require.Equal(t, "undefined", eval[string](t, ctx, `typeof window.__pwned`))
	require.Equal(t, 0, eval[int](t, ctx, `document.querySelectorAll("#incidents img, #incidents script, #incidents svg").length`))
	require.Equal(t, "2", text(t, ctx, row(otherFP)+" td.parked"))
	require.Equal(t, "3 incidents match.", text(t, ctx, "#incidents-total"))

	// The overview leads with the largest incidents, each linking to its records.
	visit(t, ctx, e.url+"/ui/", "#top-incidents")
	require.Equal(t, []string{timeoutFP, evilFP, otherFP},
		eval[[]string](t, ctx, `Array.from(document.querySelectorAll("#top-incidents tr.incident-row")).map(r => r.dataset.fingerprint)`))
	require.Equal(t, hostileClass, text(t, ctx, "#top-incidents "+row(evilFP)+" .cls"))
	trend := eval[[]int](t, ctx, fmt.Sprintf(`Array.from(document.querySelectorAll(%q)).map(r => Number(r.dataset.count))`,
		"#top-incidents "+row(timeoutFP)+" svg.trend rect"))
	require.Len(t, trend, 24, "a bar per hour")
	sum := 0
	for _, n := range trend {
		sum += n
	}
	require.Equal(t, 6, sum, "its records were stored within the last 24 hours")
	require.Equal(t, "undefined", eval[string](t, ctx, `typeof window.__pwned`))
	submit(t, ctx, "#top-incidents "+row(timeoutFP)+" a", "#records")
	require.Equal(t, 6, eval[int](t, ctx, `document.querySelectorAll("tr.record-row").length`))

	// Its records, then its bulk job: the dry run counts the incident's records only.
	visit(t, ctx, e.url+"/ui/incidents", "#incidents")
	submit(t, ctx, row(timeoutFP)+" a.records-link", "#records")
	require.Equal(t, 6, eval[int](t, ctx, `document.querySelectorAll("tr.record-row").length`))
	require.Equal(t, timeoutFP, run(t, ctx, chromedp.Value(`#filters input[name="fingerprint"]`)))
	visit(t, ctx, e.url+"/ui/incidents", "#incidents")
	submit(t, ctx, row(evilFP)+" a.bulk-link", "#bulk")
	do(t, ctx, chromedp.Click("#bulk summary"), chromedp.WaitVisible("#bulk-dry-run"),
		chromedp.Click("#bulk-discard"), chromedp.SendKeys("#bulk-reason", "bad producer build"))
	submit(t, ctx, "#bulk-dry-run", "#bulk-count")
	require.Equal(t, "3", text(t, ctx, "#bulk-count"), "the dry run counts the incident's records")
	do(t, ctx, chromedp.SendKeys("#confirm-count", "3"))
	submit(t, ctx, "#confirm", "#job-status")
	waitJobPage(t, ctx, "succeeded")
	require.Equal(t, int64(3), e.count(store.Filter{Fingerprint: evilFP, Statuses: []store.Status{store.StatusDiscarded}}))
	require.Equal(t, int64(6), e.count(store.Filter{Fingerprint: timeoutFP, Statuses: []store.Status{store.StatusParked}}),
		"the other incident is untouched")
	visit(t, ctx, e.url+"/ui/incidents", "#incidents")
	require.Equal(t, 0, eval[int](t, ctx, fmt.Sprintf(`document.querySelectorAll(%q).length`, row(evilFP))),
		"a discarded incident is gone")

	viewer := e.tab(t)
	e.signIn(t, viewer, viewerToken)
	visit(t, viewer, e.url+"/ui/incidents", row(timeoutFP))
	require.Equal(t, 0, eval[int](t, viewer, `document.querySelectorAll("a.bulk-link").length`), "a viewer cannot bulk")
	require.Equal(t, 1, eval[int](t, viewer, fmt.Sprintf(`document.querySelectorAll(%q).length`, row(otherFP))))

	scoped := e.tab(t)
	e.signIn(t, scoped, scopedToken)
	visit(t, scoped, e.url+"/ui/incidents", row(timeoutFP))
	require.Equal(t, 0, eval[int](t, scoped, fmt.Sprintf(`document.querySelectorAll(%q).length`, row(otherFP))))
	require.NotContains(t, text(t, scoped, "main"), e.other)
	require.Equal(t, fmt.Sprintf("%d incidents match.", eval[int](t, scoped, `document.querySelectorAll("tr.incident-row").length`)),
		text(t, scoped, "#incidents-total"), "the token's topics only")
	do(t, scoped, chromedp.Navigate(e.url+"/ui/incidents?"+url.Values{"original_topic": {e.other}}.Encode()),
		chromedp.WaitVisible("#no-incidents"))
}
