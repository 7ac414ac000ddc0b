package console_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/store"
)

// Hostile text: each piece sets window.__pwned (or adds an <img>) if it ever runs or
// becomes markup.
const (
	hostileValue  = `<script>window.__pwned="value"</script>"><img src=x onerror="window.__pwned='value-img'">`
	hostileKey    = `"><img src=x onerror="window.__pwned='key'">`
	hostileHeader = `<img src=x onerror="window.__pwned='header'">`
	hostileError  = `</td><script>window.__pwned="error"</script><img src=x onerror="window.__pwned='error-img'">`
	hostileClass  = `<svg onload="window.__pwned='class'">`
)

// TestConsole drives the console in headless Chromium against the real stack. The setup
// (store, topics, API, job runner, browser) is shared; each subtest is a scenario of its
// own: it parks the records it selects by error class, signs in in a browser context of
// its own, and relies on no other subtest having run (-run 'TestConsole/CancelJob' runs
// one alone).
func TestConsole(t *testing.T) {
	e := newEnv(t)

	t.Run("SignIn", func(t *testing.T) {
		e := e.sub(t)
		ctx := e.tab(t)
		visit(t, ctx, e.url+"/", "#token")
		require.Contains(t, run(t, ctx, chromedp.Location()), "/ui/login", "without a session the console asks for a token")
		do(t, ctx, chromedp.SendKeys("#token", "not-a-token"))
		submit(t, ctx, "#sign-in", "#login-error")
		require.Equal(t, "That token is not valid.", text(t, ctx, "#login-error"))
		e.shot(t, ctx, "login")

		e.park("Overview", e.orders, 3)
		e.signIn(t, ctx, viewerToken)
		require.Equal(t, "vera", text(t, ctx, "#principal"))
		require.Equal(t, "viewer", text(t, ctx, "#role"))
		parked, err := strconv.Atoi(text(t, ctx, "#parked-total"))
		require.NoError(t, err)
		require.GreaterOrEqual(t, parked, 3)
		require.Contains(t, text(t, ctx, "#tally-original"), e.orders)
		require.Contains(t, text(t, ctx, "#overview-routes"), e.routeName)
		require.Equal(t, 1, eval[int](t, ctx, `document.querySelectorAll("#reason-chart rect").length`),
			"one bar: every parked record is exhausted")
		// Parked over time: 24 hours, the last one holding at least the records just parked.
		require.Equal(t, 24, eval[int](t, ctx, `document.querySelectorAll("#parked-chart rect.stored").length`))
		lastHour := eval[[]int](t, ctx, `(() => { const r = Array.from(document.querySelectorAll("#parked-chart rect.stored")).pop();
			return [Number(r.dataset.stored), Number(r.dataset.stillParked), Number(r.getAttribute("height"))]; })()`)
		require.GreaterOrEqual(t, lastHour[0], 3, "stored this hour")
		require.GreaterOrEqual(t, lastHour[1], 3, "still parked")
		require.Positive(t, lastHour[2], "drawn")
		e.shot(t, ctx, "overview")
		submit(t, ctx, fmt.Sprintf(`#tally-original a[href*=%q]`, e.orders), "#records")
		require.Equal(t, e.orders, run(t, ctx, chromedp.Value(`#filters input[name="original_topic"]`)),
			"a count links to its records")

		// The cookie is HttpOnly: the page's scripts cannot read the session.
		require.Equal(t, "", eval[string](t, ctx, `document.cookie`))
	})

	t.Run("FilterAndPage", func(t *testing.T) {
		e := e.sub(t)
		ids := e.park("PageErr", e.orders, 25)
		e.park("OtherErr", e.orders, 4)
		ctx := e.tab(t)
		e.signIn(t, ctx, viewerToken)
		visit(t, ctx, e.url+"/ui/records", "#filters")
		do(t, ctx, chromedp.SendKeys(`#filters input[name="error_class"]`, "PageErr"),
			chromedp.SendKeys(`#filters input[name="limit"]`, "10"))
		submit(t, ctx, "#apply-filters", "#next-page")
		loc, err := url.Parse(run(t, ctx, chromedp.Location()))
		require.NoError(t, err)
		require.Equal(t, "PageErr", loc.Query().Get("error_class"), "the filter is in the URL")
		e.shot(t, ctx, "records")

		var seen []int64
		for page := 1; ; page++ {
			rows := eval[[]string](t, ctx, `Array.from(document.querySelectorAll("tr.record-row")).map(r => r.dataset.id)`)
			for _, r := range rows {
				id, err := strconv.ParseInt(r, 10, 64)
				require.NoError(t, err)
				seen = append(seen, id)
			}
			if page < 3 {
				require.Len(t, rows, 10, "page %d", page)
				submit(t, ctx, "#next-page", "#first-page")
				continue
			}
			require.Len(t, rows, 5)
			require.Equal(t, 0, eval[int](t, ctx, `document.querySelectorAll("#next-page").length`), "the last page has no next page")
			break
		}
		want := slices.Clone(ids)
		slices.Reverse(want)
		require.Equal(t, want, seen, "every record once, newest first")

		// A shared link opens the same view.
		ctx2 := e.tab(t)
		e.signIn(t, ctx2, viewerToken)
		visit(t, ctx2, loc.String(), "#records")
		require.Equal(t, 10, eval[int](t, ctx2, `document.querySelectorAll("tr.record-row").length`))
		require.Equal(t, "PageErr", run(t, ctx2, chromedp.Value(`#filters input[name="error_class"]`)))
	})

	t.Run("KeyFilter", func(t *testing.T) {
		e := e.sub(t)
		// "user" is valid base64 too: the text field means the text.
		user := e.park("KeyText", e.orders, 1, func(_ int, r *store.NewRecord) { r.Key = []byte("user") })[0]
		bin := e.park("KeyBinary", e.orders, 1, func(_ int, r *store.NewRecord) { r.Key = []byte{0xff, 0x00, 0x01} })[0]
		ctx := e.tab(t)
		e.signIn(t, ctx, adminToken)
		rows := func() []string {
			return eval[[]string](t, ctx, `Array.from(document.querySelectorAll("tr.record-row")).map(r => r.dataset.id)`)
		}
		// filtered waits for the page the filter form led to.
		filtered := func(param string) {
			t.Helper()
			waitTrue(t, ctx, fmt.Sprintf(`new URLSearchParams(location.search).has(%q) && document.readyState === "complete" && !!document.querySelector("#records")`, param))
		}
		do(t, ctx, chromedp.Navigate(e.url+"/ui/records"), chromedp.WaitVisible("#filters"),
			chromedp.SendKeys(`#filters input[name="key"]`, "user"), chromedp.Click("#apply-filters"))
		filtered("key")
		require.Equal(t, []string{strconv.FormatInt(user, 10)}, rows())
		loc, err := url.Parse(run(t, ctx, chromedp.Location()))
		require.NoError(t, err)
		require.Equal(t, "user", loc.Query().Get("key"), "the key is in the URL as the API names it")

		do(t, ctx, chromedp.Navigate(e.url+"/ui/records"), chromedp.WaitVisible("#filters"),
			chromedp.SendKeys(`#filters input[name="key_b64"]`, "/wAB"), chromedp.Click("#apply-filters"))
		filtered("key_b64")
		require.Equal(t, []string{strconv.FormatInt(bin, 10)}, rows())
		do(t, ctx, chromedp.Click("#bulk summary"), chromedp.WaitVisible("#bulk-dry-run"))
		submit(t, ctx, "#bulk-dry-run", "#bulk-count")
		require.Equal(t, "1", text(t, ctx, "#bulk-count"), "the bulk form keeps the base64 key")

		// A key that is not base64: the form stays, with the refusal beside the field.
		visit(t, ctx, e.url+"/ui/records?key_b64=user!", "#filter-error-key_b64")
		require.Contains(t, text(t, ctx, "#filter-error-key_b64"), "base64")
		require.Equal(t, "user!", run(t, ctx, chromedp.Value(`#filters input[name="key_b64"]`)))
	})

	t.Run("RecordRendering", func(t *testing.T) {
		e := e.sub(t)
		jsonID := e.park("JSONValue", e.orders, 1, func(_ int, r *store.NewRecord) {
			r.Value = []byte(`{"order":{"id":42,"lines":[1,2]}}`)
		})[0]
		// Confluent wire format: magic byte 0, schema id 300, then Avro-like binary.
		wire := []byte{0, 0, 0, 1, 44, 0x02, 0xff, 0xfe, 0x10}
		binID := e.park("BinaryValue", e.orders, 1, func(_ int, r *store.NewRecord) {
			r.Value = wire
			r.Key = []byte{0xde, 0xad, 0xbe, 0xef}
			r.Headers = append(r.Headers, store.Header{Key: "bin\x00\x01", Value: []byte{0, 1, 2}}, store.Header{Key: "nullvalue"})
		})[0]
		hostileID := e.park(hostileClass, e.orders, 1, func(_ int, r *store.NewRecord) {
			r.Value, r.Key, r.ErrorMessage = []byte(hostileValue), []byte(hostileKey), hostileError
			r.Headers = append(r.Headers, store.Header{Key: hostileHeader, Value: []byte(hostileValue)})
		})[0]
		ctx := e.tab(t)
		e.signIn(t, ctx, viewerToken)

		visit(t, ctx, fmt.Sprintf("%s/ui/records/%d", e.url, jsonID), "#value-payload")
		require.Equal(t, "{\n  \"order\": {\n    \"id\": 42,\n    \"lines\": [\n      1,\n      2\n    ]\n  }\n}",
			run(t, ctx, chromedp.TextContent("#value-payload")), "JSON is pretty-printed")
		require.Equal(t, "JSONValue-key-0", run(t, ctx, chromedp.TextContent("#key-payload")))
		e.shot(t, ctx, "record-json")

		visit(t, ctx, fmt.Sprintf("%s/ui/records/%d", e.url, binID), "#value-payload")
		require.Equal(t, "schema id 300", text(t, ctx, "#value-schema"))
		require.Contains(t, run(t, ctx, chromedp.TextContent("#value-payload")), "02 ff fe 10", "the data after the wire-format prefix, as hex")
		require.Contains(t, run(t, ctx, chromedp.TextContent("#key-payload")), "de ad be ef")
		require.Contains(t, text(t, ctx, "#headers"), "0x62696e0001", "a header name that is not printable text is shown as hex")
		require.Contains(t, text(t, ctx, "#headers"), "0x000102")
		require.Contains(t, text(t, ctx, "#headers"), "null")
		e.shot(t, ctx, "record-binary")

		inert := func(page string) {
			t.Helper()
			require.Equal(t, "undefined", eval[string](t, ctx, `typeof window.__pwned`), "%s: attacker text ran", page)
			require.Equal(t, 0, eval[int](t, ctx, `document.querySelectorAll("img, svg:not(.chart) , [onerror], [onload]").length`),
				"%s: attacker text became markup", page)
			require.Equal(t, []string{e.url + "/ui/static/console.js"},
				eval[[]string](t, ctx, `Array.from(document.scripts).map(s => s.src)`), "%s: the console's own script only", page)
		}
		visit(t, ctx, fmt.Sprintf("%s/ui/records/%d", e.url, hostileID), "#value-payload")
		inert("record")
		require.Equal(t, hostileValue, run(t, ctx, chromedp.TextContent("#value-payload")))
		require.Equal(t, hostileKey, run(t, ctx, chromedp.TextContent("#key-payload")))
		require.Equal(t, hostileError, run(t, ctx, chromedp.TextContent("#error-text")))
		require.Equal(t, hostileClass, run(t, ctx, chromedp.TextContent("#error-class")))
		require.Contains(t, eval[[]string](t, ctx, `Array.from(document.querySelectorAll(".hname")).map(e => e.textContent)`), hostileHeader)
		e.shot(t, ctx, "record-hostile")

		do(t, ctx, chromedp.Navigate(e.url+"/ui/records?"+url.Values{"error_class": {hostileClass}}.Encode()),
			chromedp.WaitVisible("#records"))
		inert("records")
		require.Contains(t, run(t, ctx, chromedp.TextContent("#records")), hostileError)
		require.Equal(t, hostileClass, run(t, ctx, chromedp.Value(`#filters input[name="error_class"]`)))
	})

	t.Run("ReplayOne", func(t *testing.T) {
		e := e.sub(t)
		id := e.park("ReplayOne", e.orders, 1, func(_ int, r *store.NewRecord) {
			r.Value = []byte("replay-one-" + e.orders)
		})[0]
		ctx := e.tab(t)
		e.signIn(t, ctx, operatorToken)
		visit(t, ctx, fmt.Sprintf("%s/ui/records/%d", e.url, id), "#replay-form")
		do(t, ctx, chromedp.Click("#replay-reset"))
		submit(t, ctx, "#replay", "#job-status")
		waitJobPage(t, ctx, "succeeded")
		require.Equal(t, "1", text(t, ctx, "#job-done"))
		e.shot(t, ctx, "job")
		require.Equal(t, store.StatusReplayed, e.status(id))
		e.consume(t, e.orders, 1, func(m *kafka.Message) bool { return string(m.Value) == "replay-one-"+e.orders })
		visit(t, ctx, fmt.Sprintf("%s/ui/records/%d", e.url, id), "#produced")
		require.Equal(t, "replayed", text(t, ctx, "#record-status"))
		require.Contains(t, text(t, ctx, "#produced"), e.orders)
		require.Equal(t, 0, eval[int](t, ctx, `document.querySelectorAll("#replay-form").length`), "a replayed record has no actions")
	})

	t.Run("EditAndReplay", func(t *testing.T) {
		e := e.sub(t)
		const bad, fixed = `{"amount":"12,50"}`, `{"amount": 12.5}`
		id := e.park("EditOne", e.orders, 1, func(_ int, r *store.NewRecord) {
			r.Value = []byte(bad)
			r.Headers = append(r.Headers, store.Header{Key: "currency", Value: []byte("EUR")})
		})[0]
		ctx := e.tab(t)
		e.signIn(t, ctx, operatorToken)
		do(t, ctx, chromedp.Navigate(fmt.Sprintf("%s/ui/records/%d", e.url, id)), chromedp.WaitVisible("#edit"),
			chromedp.Click("#edit summary"), chromedp.WaitVisible("#edit-value"))
		require.Equal(t, bad, run(t, ctx, chromedp.Value("#edit-value")))
		headers := run(t, ctx, chromedp.Value("#edit-headers"))
		require.Contains(t, headers, "currency: EUR")
		do(t, ctx, chromedp.Clear("#edit-value"), chromedp.SendKeys("#edit-value", fixed),
			chromedp.SetValue("#edit-headers", headers+"\nfixed-by: console"))
		e.shot(t, ctx, "record-edit")
		submit(t, ctx, "#edit-replay", "#confirm-replay")
		diff := text(t, ctx, ".value-diff")
		require.Contains(t, diff, `-   "amount": "12,50"`, "the confirmation shows the diff before anything is sent")
		require.Contains(t, diff, `+   "amount": 12.5`)
		require.Contains(t, text(t, ctx, ".header-diff"), "fixed-by")
		require.Zero(t, e.count(store.Filter{Statuses: []store.Status{store.StatusReplaying, store.StatusReplayed}, ErrorClass: "EditOne"}),
			"nothing is replayed before the confirmation")
		e.shot(t, ctx, "record-edit-confirm")
		submit(t, ctx, "#confirm-replay", "#job-status")
		waitJobPage(t, ctx, "succeeded")

		got := e.consume(t, e.orders, 1, func(m *kafka.Message) bool { return string(m.Value) == fixed })[0]
		hs := map[string]string{}
		for _, h := range got.Headers {
			hs[h.Key] = string(h.Value)
		}
		require.Equal(t, "console", hs["fixed-by"])
		require.Equal(t, "EUR", hs["currency"])

		rec, err := e.store.Get(context.Background(), id)
		require.NoError(t, err)
		require.Equal(t, store.StatusReplayed, rec.Status)
		require.Equal(t, bad, string(rec.Value), "the stored record keeps what was dead-lettered")

		visit(t, ctx, e.url+"/ui/audit", "#audit")
		audit := text(t, ctx, "#audit")
		require.Contains(t, audit, "edited: value 18 bytes sha256:")
		require.Contains(t, audit, `headers added ["fixed-by"]`)
	})

	t.Run("EditBinary", func(t *testing.T) {
		e := e.sub(t)
		stored, fixed := []byte{0xde, 0xad, 0x00, 0xff}, []byte{0x01, 0x00, 0xfe, 0xff, 0x80}
		id := e.park("EditBinary", e.orders, 1, func(_ int, r *store.NewRecord) {
			r.Value = stored
			r.Headers = append(r.Headers, store.Header{Key: "trace", Value: []byte{0x00, 0xff}})
		})[0]
		ctx := e.tab(t)
		e.signIn(t, ctx, operatorToken)
		do(t, ctx, chromedp.Navigate(fmt.Sprintf("%s/ui/records/%d", e.url, id)), chromedp.WaitVisible("#edit"),
			chromedp.Click("#edit summary"), chromedp.WaitVisible("#edit-value"))
		b64 := base64.StdEncoding.EncodeToString
		require.Equal(t, "base64", run(t, ctx, chromedp.Value("#edit-value-encoding")), "a value that is not text is offered in base64")
		require.Equal(t, b64(stored), run(t, ctx, chromedp.Value("#edit-value")))
		require.Equal(t, "base64", run(t, ctx, chromedp.Value("#edit-headers-encoding")))
		headers := run(t, ctx, chromedp.Value("#edit-headers"))
		require.Contains(t, headers, b64([]byte("trace"))+" "+b64([]byte{0x00, 0xff}))
		do(t, ctx, chromedp.SetValue("#edit-value", b64(fixed)),
			chromedp.SetValue("#edit-headers", headers+"\n"+b64([]byte("sig"))+" "+b64([]byte{0xca, 0xfe, 0x00})+"\n"+b64([]byte("tomb"))+" -"))
		e.shot(t, ctx, "record-edit-binary")
		submit(t, ctx, "#edit-replay", "#confirm-replay")
		require.Contains(t, text(t, ctx, ".value-diff"), "+ base64:"+b64(fixed))
		submit(t, ctx, "#confirm-replay", "#job-status")
		waitJobPage(t, ctx, "succeeded")

		got := e.consume(t, e.orders, 1, func(m *kafka.Message) bool { return bytes.Equal(m.Value, fixed) })[0]
		hs := map[string][]byte{}
		for _, h := range got.Headers {
			hs[h.Key] = h.Value
		}
		require.Equal(t, []byte{0xca, 0xfe, 0x00}, hs["sig"], "byte-exact")
		require.Equal(t, []byte{0x00, 0xff}, hs["trace"])
		require.Contains(t, hs, "tomb")
		require.Nil(t, hs["tomb"], "a null header value stays null")
		rec, err := e.store.Get(context.Background(), id)
		require.NoError(t, err)
		require.Equal(t, stored, rec.Value, "the stored record keeps what was dead-lettered")
	})

	t.Run("Discard", func(t *testing.T) {
		e := e.sub(t)
		id := e.park("DiscardOne", e.orders, 1)[0]
		ctx := e.tab(t)
		e.signIn(t, ctx, operatorToken)
		visit(t, ctx, fmt.Sprintf("%s/ui/records/%d", e.url, id), "#discard-form")
		do(t, ctx, chromedp.SendKeys("#discard-reason", "duplicate of order 42"))
		submit(t, ctx, "#discard", "#flash")
		require.Equal(t, "Record discarded.", text(t, ctx, "#flash"))
		require.Equal(t, "discarded", text(t, ctx, "#record-status"))
		require.Equal(t, store.StatusDiscarded, e.status(id))
		visit(t, ctx, e.url+"/ui/audit", "#audit")
		require.Contains(t, text(t, ctx, "#audit"), "duplicate of order 42")
		e.shot(t, ctx, "audit")
	})

	t.Run("HistoryAndAuditFilters", func(t *testing.T) {
		e := e.sub(t)
		ids := e.park("HistoryErr", e.orders, 2)
		discarded, replayed := ids[0], ids[1]
		ctx := e.tab(t)
		e.signIn(t, ctx, operatorToken)
		visit(t, ctx, fmt.Sprintf("%s/ui/records/%d", e.url, discarded), "#discard-form")
		do(t, ctx, chromedp.SendKeys("#discard-reason", "history check"))
		submit(t, ctx, "#discard", "#flash")
		visit(t, ctx, fmt.Sprintf("%s/ui/records/%d", e.url, replayed), "#replay-form")
		submit(t, ctx, "#replay", "#job-status")
		waitJobPage(t, ctx, "succeeded")

		actions := func(table string) []string {
			return eval[[]string](t, ctx, fmt.Sprintf(`Array.from(document.querySelectorAll("%s tr.audit-row .audit-action")).map(c => c.textContent)`, table))
		}
		visit(t, ctx, fmt.Sprintf("%s/ui/records/%d", e.url, replayed), "#record-history")
		require.Equal(t, []string{"finish_replay", "begin_replay", "create_replay_job"}, actions("#record-history"),
			"the record's history, newest first")
		e.shot(t, ctx, "record-history")
		visit(t, ctx, fmt.Sprintf("%s/ui/records/%d", e.url, discarded), "#record-history")
		require.Equal(t, []string{"discard"}, actions("#record-history"))
		require.Contains(t, text(t, ctx, "#record-history"), "history check")

		visit(t, ctx, e.url+"/ui/audit", "#audit-filters")
		all := actions("#audit")
		require.Contains(t, all, "discard")
		require.Contains(t, eval[string](t, ctx, `Array.from(document.querySelectorAll("#audit tr.audit-fold .audit-action")).map(c => c.textContent).join()`),
			"begin_replay ×1", "a job's batch rows are folded into one entry")
		do(t, ctx, chromedp.Click("#show-batches"), chromedp.WaitVisible("#fold-batches"))
		require.Contains(t, actions("#audit"), "begin_replay", "and shown one by one on demand")
		visit(t, ctx, e.url+"/ui/audit", "#audit-filters")
		do(t, ctx, chromedp.SendKeys(`#audit-filters input[name="action"]`, "discard"),
			chromedp.SendKeys(`#audit-filters input[name="actor"]`, "otto"), chromedp.Click("#apply-audit-filters"))
		waitTrue(t, ctx, `new URLSearchParams(location.search).get("action") === "discard" && document.readyState === "complete" && !!document.querySelector("#audit")`)
		narrowed := actions("#audit")
		require.NotEmpty(t, narrowed)
		require.Less(t, len(narrowed), len(all), "the filter narrows")
		for _, a := range narrowed {
			require.Equal(t, "discard", a)
		}
		require.Equal(t, "otto", run(t, ctx, chromedp.Value(`#audit-filters input[name="actor"]`)), "the filter is kept in the URL and the form")
		e.shot(t, ctx, "audit-filtered")

		visit(t, ctx, fmt.Sprintf("%s/ui/audit?record_id=%d", e.url, replayed), "#audit")
		require.Equal(t, []string{"finish_replay", "begin_replay", "create_replay_job"}, actions("#audit"))
	})

	t.Run("BulkReplay", func(t *testing.T) {
		e := e.sub(t)
		const parked = 31
		ids := e.park("BulkErr", e.orders, parked)
		ctx := e.tab(t)
		e.signIn(t, ctx, adminToken)
		visit(t, ctx, e.url+"/ui/records?status=parked&error_class=BulkErr", "#bulk")
		do(t, ctx, chromedp.Click("#bulk summary"), chromedp.WaitVisible("#bulk-dry-run"),
			chromedp.Clear("#bulk-rate"), chromedp.SendKeys("#bulk-rate", "10"))
		submit(t, ctx, "#bulk-dry-run", "#bulk-count")
		require.Equal(t, strconv.Itoa(parked), text(t, ctx, "#bulk-count"), "the dry run counts the filter's records")
		require.Equal(t, int64(parked), e.count(store.Filter{ErrorClass: "BulkErr", Statuses: []store.Status{store.StatusParked}}),
			"a dry run changes nothing")
		e.shot(t, ctx, "bulk-confirm")

		do(t, ctx, chromedp.SendKeys("#confirm-count", "29"))
		submit(t, ctx, "#confirm", "#bulk-error")
		require.Equal(t, "Type the count shown to confirm.", text(t, ctx, "#bulk-error"))
		require.Equal(t, int64(0), e.count(store.Filter{ErrorClass: "BulkErr", Statuses: []store.Status{store.StatusReplayed}}),
			"a wrong count submits nothing")

		// Someone discards one of them meanwhile: the confirmation of the old count shows
		// the new one.
		_, err := e.store.DiscardRecord(context.Background(), ids[0], "meanwhile", store.Actor{Name: "test"})
		require.NoError(t, err)
		const n = parked - 1
		do(t, ctx, chromedp.SendKeys("#confirm-count", strconv.Itoa(parked)), chromedp.Click("#confirm"))
		waitText(t, ctx, "#bulk-error", "The selection changed since the dry run; confirm the new count.")
		require.Equal(t, strconv.Itoa(n), text(t, ctx, "#bulk-count"))

		do(t, ctx, chromedp.SendKeys("#confirm-count", strconv.Itoa(n)))
		submit(t, ctx, "#confirm", "#job-status")
		// The page follows the job by script, without reloading: a marker set now is still
		// there when the page shows a count between none and all.
		eval[bool](t, ctx, `window.__marker = true`)
		done := run(t, ctx, chromedp.Poll[int](fmt.Sprintf(`(() => {
			const d = Number(document.querySelector("#job-done").textContent);
			return window.__marker === true && d > 0 && d < %d ? d : 0; })()`, n),
			chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(time.Minute)))
		require.Positive(t, done)
		e.shot(t, ctx, "bulk-progress")
		waitJobPage(t, ctx, "succeeded")
		require.Equal(t, strconv.Itoa(n), text(t, ctx, "#job-done"))
		require.Equal(t, "0", text(t, ctx, "#job-failed"))
		require.Equal(t, "0", text(t, ctx, "#job-skipped"))
		require.Equal(t, int64(n), e.count(store.Filter{ErrorClass: "BulkErr", Statuses: []store.Status{store.StatusReplayed}}))
		seen := map[string]int{}
		for _, m := range e.consume(t, e.orders, n, func(m *kafka.Message) bool { return bytes.Contains(m.Value, []byte(`"class":"BulkErr"`)) }) {
			seen[string(m.Value)]++
		}
		require.Len(t, seen, n, "each record is on its original topic")
	})

	t.Run("CancelJob", func(t *testing.T) {
		e := e.sub(t)
		// 120 records at 2 per second keep the job running for a minute, so the click lands
		// on a running job's page however slow the machine. (20 took 10 s: under load the job
		// finished first, its page reloaded to the final state under the click, and chromedp
		// failed with "Could not find node with given id".)
		const n = 120
		e.park("CancelErr", e.orders, n)
		ctx := e.startBulkReplay(t, "CancelErr", n, 2)
		do(t, ctx, chromedp.Click("#cancel"))
		waitText(t, ctx, "#flash", "Job cancelled.")
		waitJobPage(t, ctx, "cancelled")
		// Every record is accounted for: replayed before the cancel, or still parked.
		require.Eventually(t, func() bool {
			replayed := e.count(store.Filter{ErrorClass: "CancelErr", Statuses: []store.Status{store.StatusReplayed}})
			parked := e.count(store.Filter{ErrorClass: "CancelErr", Statuses: []store.Status{store.StatusParked}})
			return replayed+parked == n && parked > 0
		}, time.Minute, 100*time.Millisecond)
	})

	t.Run("BulkSkipped", func(t *testing.T) {
		e := e.sub(t)
		const n, gone = 12, 3
		ids := e.park("SkipErr", e.orders, n)
		ctx := e.startBulkReplay(t, "SkipErr", n, 2)
		// Records discarded while the job runs are no longer parked when it meets them.
		discarded := 0
		for i := len(ids) - 1; i >= 0 && discarded < gone; i-- {
			if _, err := e.store.DiscardRecord(context.Background(), ids[i], "meanwhile", store.Actor{Name: "test"}); err == nil {
				discarded++
			}
		}
		require.Equal(t, gone, discarded)
		waitJobPage(t, ctx, "succeeded")
		require.Equal(t, strconv.Itoa(n-gone), text(t, ctx, "#job-done"))
		require.Equal(t, "0", text(t, ctx, "#job-failed"))
		require.Equal(t, strconv.Itoa(gone), text(t, ctx, "#job-skipped"))
		require.Equal(t, strconv.Itoa(n), text(t, ctx, "#job-total"))
		require.Equal(t, "100", run(t, ctx, chromedp.AttributeValue("#job-bar", "value")).Value, "done, failed and skipped make the whole")
		e.shot(t, ctx, "job-skipped")
	})

	// Records without payload (share groups' dead letters whose source was gone): the
	// record page says a replay is refused and why, a plain replay is refused with the
	// reason, and a bulk replay's confirmation counts them apart; its confirmation is
	// refused and nothing is produced.
	t.Run("NoPayload", func(t *testing.T) {
		ids := e.park("NoPayloadErr", e.orders, 3, func(i int, r *store.NewRecord) {
			if i < 2 {
				r.Key, r.Value = nil, nil
				r.Reason = store.ReasonSourceUnavailable
			}
		})
		ctx := e.tab(t)
		e.signIn(t, ctx, adminToken)
		visit(t, ctx, fmt.Sprintf("%s/ui/records/%d", e.url, ids[0]), "#no-payload")
		require.Contains(t, text(t, ctx, "#no-payload"), "This record has no payload: its source record was gone")
		submit(t, ctx, "#replay", "#flash")
		require.Contains(t, text(t, ctx, "#flash"), "Refused (422 Replay refused: no payload)")
		require.Contains(t, text(t, ctx, "#flash"), "a replay would produce a record that never existed")
		require.Equal(t, store.StatusParked, e.status(ids[0]))
		e.shot(t, ctx, "record-no-payload")
		visit(t, ctx, fmt.Sprintf("%s/ui/records/%d", e.url, ids[2]), "#replay")
		require.Equal(t, 0, eval[int](t, ctx, `document.querySelectorAll("#no-payload").length`), "a record with its payload")

		visit(t, ctx, e.url+"/ui/records?status=parked&error_class=NoPayloadErr", "#bulk")
		do(t, ctx, chromedp.Click("#bulk summary"), chromedp.WaitVisible("#bulk-dry-run"))
		submit(t, ctx, "#bulk-dry-run", "#bulk-no-payload")
		require.Equal(t, "3", text(t, ctx, "#bulk-count"))
		require.Contains(t, text(t, ctx, "#bulk-no-payload"), "2 of them have no payload")
		e.shot(t, ctx, "bulk-no-payload")
		do(t, ctx, chromedp.SendKeys("#confirm-count", "3"))
		submit(t, ctx, "#confirm", "#error-detail")
		require.Contains(t, text(t, ctx, "#error-status"), "422")
		require.Contains(t, text(t, ctx, "#error-detail"), "2 of the 3 selected records have no payload")
		require.Equal(t, int64(3), e.count(store.Filter{ErrorClass: "NoPayloadErr", Statuses: []store.Status{store.StatusParked}}),
			"nothing replayed")
	})

	t.Run("PauseResumeRoute", func(t *testing.T) {
		e := e.sub(t)
		// The next run a worker reported for the route.
		next := time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)
		require.NoError(t, e.store.SetNextRun(context.Background(), e.routeName, "@every 1m", next))
		ctx := e.tab(t)
		e.signIn(t, ctx, operatorToken)
		require.Contains(t, text(t, ctx, "#overview-routes .next-run"), "2027-01-01 00:00:00Z", "the overview shows the next run")
		row := fmt.Sprintf(`tr.route-row[data-route=%q]`, e.routeName)
		visit(t, ctx, e.url+"/ui/routes", row+" button.pause")
		require.Equal(t, "2027-01-01 00:00:00Z", text(t, ctx, row+" .next-run"))
		submit(t, ctx, row+" button.pause", row+" button.resume")
		require.Equal(t, "paused", text(t, ctx, row+" .route-state"))
		require.Equal(t, "2027-01-01 00:00:00Z (skipped while paused)", text(t, ctx, row+" .next-run"))
		require.True(t, e.paused())
		e.shot(t, ctx, "routes")
		submit(t, ctx, row+" button.resume", row+" button.pause")
		require.Equal(t, "active", text(t, ctx, row+" .route-state"))
		require.False(t, e.paused())
	})

	t.Run("ViewerSeesNoControlsAndForgedPostsFail", func(t *testing.T) {
		e := e.sub(t)
		id := e.park("ForgeErr", e.orders, 1)[0]
		ctx := e.tab(t)
		e.signIn(t, ctx, viewerToken)
		visit(t, ctx, fmt.Sprintf("%s/ui/records/%d", e.url, id), "#value-payload")
		require.Equal(t, 0, eval[int](t, ctx, `document.querySelectorAll("#replay-form, #discard-form, #retry-now-form").length`))
		visit(t, ctx, e.url+"/ui/routes", "#routes")
		require.Equal(t, 0, eval[int](t, ctx, `document.querySelectorAll("#routes button").length`))
		visit(t, ctx, e.url+"/ui/records?status=parked", "#records")
		require.Equal(t, 0, eval[int](t, ctx, `document.querySelectorAll("#bulk").length`))

		// A viewer forging the discard form, with a valid CSRF token: the API refuses it.
		forge := func(ctx context.Context, withCSRF bool) {
			t.Helper()
			eval[bool](t, ctx, fmt.Sprintf(`(() => {
				const f = document.createElement("form");
				f.method = "post"; f.action = "/ui/records/%d/discard";
				const add = (n, v) => { const i = document.createElement("input"); i.type = "hidden"; i.name = n; i.value = v; f.appendChild(i); };
				add("reason", "forged");
				if (%t) { add("csrf", document.querySelector("#logout").form.csrf.value); }
				const b = document.createElement("button"); b.id = "forged"; f.appendChild(b);
				document.body.appendChild(f); return true; })()`, id, withCSRF))
			do(t, ctx, chromedp.Click("#forged"))
		}
		forge(ctx, true)
		do(t, ctx, chromedp.WaitVisible("#flash"))
		require.Equal(t, "Refused (403 Forbidden): this needs the operator role", text(t, ctx, "#flash"))
		require.Equal(t, store.StatusParked, e.status(id))

		// An operator's forged form without the CSRF token: refused before the API.
		ctx2 := e.tab(t)
		e.signIn(t, ctx2, operatorToken)
		forge(ctx2, false)
		do(t, ctx2, chromedp.WaitVisible("#error-status"))
		require.Equal(t, "403 Forbidden", text(t, ctx2, "#error-status"))
		require.Contains(t, text(t, ctx2, "#error-message"), "not sent by the console")
		require.Equal(t, store.StatusParked, e.status(id))

		// Another site posting the form in the operator's browser: the SameSite=Strict
		// cookie stays home, so there is no session to act with.
		evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprintf(w, `<form id="f" method="post" action="%s/ui/records/%d/discard"><input name="reason" value="evil"></form>`+
				`<script>document.getElementById("f").submit()</script>`, e.url, id)
		}))
		defer evil.Close()
		evilURL := strings.Replace(evil.URL, "127.0.0.1", "localhost", 1) // another site than the console's
		visit(t, ctx2, evilURL, "#error-status")
		require.Equal(t, "401 Unauthorized", text(t, ctx2, "#error-status"))
		require.Equal(t, store.StatusParked, e.status(id))
	})

	t.Run("ScopedTokenSeesOnlyItsTopics", func(t *testing.T) {
		e := e.sub(t)
		mine := e.park("ScopeMine", e.orders, 2)
		theirs := e.park("ScopeTheirs", e.other, 2)
		ctx := e.tab(t)
		e.signIn(t, ctx, scopedToken)
		visit(t, ctx, e.url+"/ui/records?limit=500", "#records")
		rows := eval[[]string](t, ctx, `Array.from(document.querySelectorAll("tr.record-row")).map(r => r.dataset.id)`)
		require.Contains(t, rows, strconv.FormatInt(mine[0], 10))
		for _, id := range theirs {
			require.NotContains(t, rows, strconv.FormatInt(id, 10))
		}
		require.NotContains(t, text(t, ctx, "#records"), e.other)
		visit(t, ctx, fmt.Sprintf("%s/ui/records/%d", e.url, theirs[0]), "#error-status")
		require.Equal(t, "404 Not found", text(t, ctx, "#error-status"))
		visit(t, ctx, e.url+"/ui/", "#tally-original")
		require.NotContains(t, text(t, ctx, "main"), e.other)
		require.Equal(t, 0, eval[int](t, ctx, `document.querySelectorAll("#overview-routes, a[href='/ui/routes']").length`),
			"routes span every topic: a scoped token does not see them")
		visit(t, ctx, e.url+"/ui/records?"+url.Values{"original_topic": {e.other}}.Encode(), "#no-records")
	})

	t.Run("Pages", func(t *testing.T) {
		e := e.sub(t)
		bg := context.Background()
		rn, err := e.store.BeginRun(bg, e.routeName, "worker-1")
		require.NoError(t, err)
		require.NoError(t, e.store.RecordLedger(bg, store.LedgerEntry{RunID: rn.ID, Topic: e.orders + ".dlq", Partition: 2,
			From: 100, To: 250, Redriven: 140, Parked: 7, Skipped: 3}))
		require.NoError(t, e.store.EndRun(bg, store.RunEnd{ID: rn.ID, Status: store.RunSucceeded}))
		ctx := e.tab(t)
		e.signIn(t, ctx, adminToken)
		for _, p := range []struct{ path, sel, name string }{
			{"/ui/jobs", "#jobs", "jobs"}, {"/ui/runs", "h1", "runs"}, {"/ui/reference", "#spec-link", "reference"},
		} {
			visit(t, ctx, e.url+p.path, p.sel)
			e.shot(t, ctx, p.name)
		}
		require.Contains(t, text(t, ctx, "main"), "/v1/records/{id}/replay")
		visit(t, ctx, e.url+"/ui/runs?route="+url.QueryEscape(e.routeName), fmt.Sprintf("#run-%d", rn.ID))
		require.Equal(t, []string{e.orders + ".dlq", "2", "100–250", "140", "0", "7", "3", "0"},
			eval[[]string](t, ctx, fmt.Sprintf(`Array.from(document.querySelectorAll("#run-%d table.ledger tr:nth-child(2) td")).slice(0, 8).map(c => c.textContent)`, rn.ID)))
		resp, err := http.Get(e.url + "/ui/openapi.yaml")
		require.NoError(t, err)
		defer resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
		csp := resp.Header.Get("Content-Security-Policy")
		require.Contains(t, csp, "script-src 'self'")
		require.NotContains(t, csp, "unsafe-inline")
	})
}

// waitJobPage waits until the job page shows status.
func waitJobPage(t *testing.T, ctx context.Context, status string) {
	t.Helper()
	waitText(t, ctx, "#job-status", status)
}

// waitText waits until the element sel says want, across the navigations on the way (an
// element of the page being left may match sel too, or vanish while read).
func waitText(t *testing.T, ctx context.Context, sel, want string) {
	t.Helper()
	var got string
	require.Eventually(t, func() bool {
		tctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		s, err := chromedp.Run(tctx, chromedp.Text(sel))
		got = strings.TrimSpace(s)
		return err == nil && got == want
	}, 2*time.Minute, 100*time.Millisecond, "%s never said %q (last %q)", sel, want, got)
}

// waitTrue waits until the expression js is true, across the navigations on the way.
func waitTrue(t *testing.T, ctx context.Context, js string) {
	t.Helper()
	require.Eventually(t, func() bool {
		tctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		ok, err := chromedp.Run(tctx, chromedp.Evaluate[bool](js))
		return err == nil && ok
	}, 2*time.Minute, 100*time.Millisecond, "never true: %s", js)
}

func (e *env) paused() bool {
	e.t.Helper()
	rcs, err := e.store.RouteControls(context.Background())
	require.NoError(e.t, err)
	for _, rc := range rcs {
		if rc.Route == e.routeName {
			return rc.Paused
		}
	}
	e.t.Fatalf("route %s not registered", e.routeName)
	return false
}
