package console_test

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/store"
)

// The records page in real Chromium: a filter the API refuses keeps the form and shows the
// refusal beside its field; the page shows the filter's total; the search box finds a
// record by its value; a time picker fills the time field; and a record's "copy as kcat"
// line, run as shown, gives kcat exactly the record's bytes and runs nothing else.
func TestConsoleFindCountAndKcat(t *testing.T) {
	e := newEnv(t)
	ctx := e.tab(t)
	e.signIn(t, ctx, viewerToken)
	dir := t.TempDir()
	canary := filepath.Join(dir, "pwned")
	hostile := "'$(touch " + canary + ")`touch " + canary + "`\x1b[2J"
	ids := e.park("FindMe", e.orders, 3, func(i int, r *store.NewRecord) {
		if i == 1 {
			r.Value = append([]byte("needle-42 "+hostile), 0x00, 0xff)
			r.Headers = append(r.Headers, store.Header{Key: "x-" + hostile, Value: []byte(hostile + "\n")})
		}
	})

	// A typo in a reason: the form stays, the refusal names the reasons that exist.
	visit(t, ctx, e.url+"/ui/records?error_class=FindMe&reason=exhaust", "#filter-error-reason")
	require.Contains(t, text(t, ctx, "#filter-error-reason"), "exhausted")
	require.Equal(t, "exhaust", run(t, ctx, chromedp.Value(`#filters input[name="reason"]`)), "the form keeps what was typed")
	require.Equal(t, "FindMe", run(t, ctx, chromedp.Value(`#filters input[name="error_class"]`)))
	e.shot(t, ctx, "records-filter-error")
	visit(t, ctx, e.url+"/ui/records?error_class=FindMe&stored_from=last+week", "#filter-error-stored_from")
	require.Contains(t, text(t, ctx, "#filter-error-stored_from"), "-2h")

	// The total, and the search box.
	visit(t, ctx, e.url+"/ui/records?error_class=FindMe&limit=1", "#records-total")
	require.Equal(t, "3 records match.", text(t, ctx, "#records-total"), "every page's records, not this page's")
	do(t, ctx, chromedp.SendKeys("#search-value", "needle-42"), chromedp.Click("#apply-filters"))
	waitLoaded(t, ctx, "value_contains=needle-42")
	require.Equal(t, "1 records match.", text(t, ctx, "#records-total"))
	require.Equal(t, []string{fmt.Sprint(ids[1])}, eval[[]string](t, ctx, `Array.from(document.querySelectorAll("tr.record-row")).map(r => r.dataset.id)`))
	loc, err := url.Parse(run(t, ctx, chromedp.Location()))
	require.NoError(t, err)
	require.Equal(t, "needle-42", loc.Query().Get("value_contains"))

	// The picker writes the picked local time into the field as UTC.
	picked := eval[[]string](t, ctx, `(() => {
		const p = document.querySelector('input.time-picker[data-for="stored_from"]');
		p.value = "2026-01-02T03:04:05";
		p.dispatchEvent(new Event("change"));
		return [document.querySelector('#filters input[name="stored_from"]').value, new Date("2026-01-02T03:04:05").toISOString().replace(".000Z", "Z")];
	})()`)
	require.Equal(t, picked[1], picked[0])
	do(t, ctx, chromedp.SetValue(`#filters input[name="stored_from"]`, "-3h"), chromedp.Click("#apply-filters"))
	waitLoaded(t, ctx, "stored_from=-3h")
	require.Equal(t, "1 records match.", text(t, ctx, "#records-total"), "a relative time from the form")

	// Copy as kcat: the command the page shows, run by bash with a kcat that records what
	// it was given.
	do(t, ctx, chromedp.Navigate(fmt.Sprintf("%s/ui/records/%d", e.url, ids[1])), chromedp.WaitReady("#kcat"),
		chromedp.Click("#kcat summary"), chromedp.WaitVisible("#kcat-command"))
	e.shot(t, ctx, "record-kcat")
	cmdLine := eval[string](t, ctx, `document.getElementById("kcat-command").textContent`)
	fake := filepath.Join(dir, "kcat")
	require.NoError(t, os.WriteFile(fake, []byte("#!/bin/bash\nprintf '%s\\0' \"$@\" > \"$OUT/args\"\ncat \"${@: -1}\" > \"$OUT/stdin\"\n"), 0o755))
	sh := exec.Command("bash", "-c", cmdLine)
	sh.Env = append(os.Environ(), "PATH="+dir+":"+os.Getenv("PATH"), "OUT="+dir, "KAFKA_BROKERS=b:9092")
	out, err := sh.CombinedOutput()
	require.NoError(t, err, "%s\n%s", cmdLine, out)
	_, err = os.Stat(canary)
	require.True(t, os.IsNotExist(err), "the record's text ran as a command")
	stdin, err := os.ReadFile(filepath.Join(dir, "stdin"))
	require.NoError(t, err)
	require.Equal(t, append([]byte("needle-42 "+hostile), 0x00, 0xff), stdin)
	args, err := os.ReadFile(filepath.Join(dir, "args"))
	require.NoError(t, err)
	require.Contains(t, string(args), "\x00-H\x00x-"+hostile+"="+hostile+"\n\x00")
	require.Contains(t, string(args), "\x00-t\x00"+e.orders+"\x00")
}

// waitLoaded waits until the page the form sent has loaded, its query holding param. The
// check is retried while the page navigates, which fails a check on the leaving page.
func waitLoaded(t *testing.T, ctx context.Context, param string) {
	t.Helper()
	expr := fmt.Sprintf(`location.search.includes(%q) && document.readyState === "complete" && !!document.querySelector("#records-total")`, param)
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		if ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](expr)); err == nil && ok {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("the page with %s did not load", param)
}
