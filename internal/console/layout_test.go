package console_test

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/api"
	"github.com/dlqops/dlq/internal/store"
	"github.com/dlqops/dlq/internal/testenv"
)

//go:embed testdata/a11y.js
var a11yChecks string

// viewport is a screen the console is checked on.
type viewport struct {
	name          string
	width, height int64
	mobile        bool
}

// The console is laid out for screens down to 360 px wide.
var viewports = []viewport{{"desktop", 1440, 900, false}, {"phone", 390, 844, true}, {"small-phone", 360, 740, true}}

// springStack is a Spring Kafka stack-trace header as a DeadLetterPublishingRecoverer
// writes it: many lines, each frame on its own.
const springStack = "org.springframework.kafka.listener.ListenerExecutionFailedException: Listener failed\n" +
	"\tat org.springframework.kafka.listener.KafkaMessageListenerContainer$ListenerConsumer.decorateException(KafkaMessageListenerContainer.java:2900)\n" +
	"\tat org.springframework.kafka.listener.KafkaMessageListenerContainer$ListenerConsumer.doInvokeOnMessage(KafkaMessageListenerContainer.java:2845)\n" +
	"Caused by: java.lang.IllegalStateException: order 42 has no customer\n" +
	"\tat com.example.orders.OrderListener.onOrder(OrderListener.java:57)\n"

// springHeaders are the headers of a record Spring Kafka dead-lettered: its stack trace
// as text, its original partition and offset as 4- and 8-byte big-endian numbers.
func springHeaders() []store.Header {
	partition := binary.BigEndian.AppendUint32(nil, 4)
	offset := binary.BigEndian.AppendUint64(nil, 1234567)
	return []store.Header{
		{Key: "kafka_dlt-exception-fqcn", Value: []byte("java.lang.IllegalStateException")},
		{Key: "kafka_dlt-exception-stacktrace", Value: []byte(springStack)},
		{Key: "kafka_dlt-original-partition", Value: partition},
		{Key: "kafka_dlt-original-offset", Value: offset},
	}
}

// artefactsDir is where the layout test writes its screenshots: DLQ_ARTEFACTS_DIR, or
// artefacts/console under the cache directory. They are kept for a person to look at.
func artefactsDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("DLQ_ARTEFACTS_DIR")
	if dir == "" {
		dir = filepath.Join(testenv.CacheDir(t), "artefacts")
	}
	dir = filepath.Join(dir, "console")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	return dir
}

// emulate sets the tab's screen and colour scheme.
func emulate(vp viewport, scheme string) chromedp.Action[chromedp.Void] {
	opts := []chromedp.EmulateViewportOption{chromedp.EmulateScale(1)}
	if vp.mobile {
		opts = append(opts, chromedp.EmulateMobile, chromedp.EmulatePortrait)
	}
	return chromedp.Steps(chromedp.EmulateViewport(vp.width, vp.height, opts...),
		chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
			_, err := cdp.Call(ctx, t, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
				Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}}})
			return err
		}))
}

// checkPage runs the accessibility and layout checks on the page the tab shows.
func checkPage(t *testing.T, ctx context.Context, vp viewport, scheme, page string) {
	t.Helper()
	problems := eval[[]string](t, ctx, fmt.Sprintf("(%s)(%d)", strings.TrimSpace(a11yChecks), vp.width))
	require.Empty(t, problems, "%s at %s (%d×%d), %s scheme", page, vp.name, vp.width, vp.height, scheme)
	require.Equal(t, scheme == "dark", eval[bool](t, ctx, `matchMedia("(prefers-color-scheme: dark)").matches`))
}

// checkFocus tabs to the skip link and the link after it and checks each shows a focus
// ring of its own (an outline at least 2 px wide), not the browser's default only.
func checkFocus(t *testing.T, ctx context.Context, page string) {
	t.Helper()
	eval[bool](t, ctx, `(document.activeElement && document.activeElement.blur(), true)`)
	for _, want := range []string{"a.skip", "a.brand"} {
		do(t, ctx, chromedp.KeyEvent("\t"))
		ring := eval[[]string](t, ctx, `(() => { const el = document.activeElement, cs = getComputedStyle(el);
			return [el.matches(`+"`"+want+"`"+`) ? "yes" : el.outerHTML.slice(0, 60), cs.outlineStyle, cs.outlineWidth]; })()`)
		require.Equal(t, "yes", ring[0], "%s: Tab reaches %s", page, want)
		require.NotEqual(t, "none", ring[1], "%s: %s shows a focus ring", page, want)
		px, err := strconv.ParseFloat(strings.TrimSuffix(ring[2], "px"), 64)
		require.NoError(t, err)
		require.GreaterOrEqual(t, px, 2.0, "%s: %s focus ring width", page, want)
	}
}

// TestConsoleLayout opens every page of the console at a desktop (1440×900) and phone
// (390×844, 360×740) viewports, in the light and the dark colour scheme, and checks each: no
// horizontal overflow, landmarks, a skip link, headings, table header scopes, form
// labels, aria-current in the nav, AA contrast of all its text, a visible focus ring. The
// pages hold what makes a layout break: long unbroken names, Spring dead letters with
// stack traces, wide tables. Screenshots of each are kept (artefactsDir).
func TestConsoleLayout(t *testing.T) {
	e := newEnv(t)
	shots := artefactsDir(t)
	long := strings.Repeat("x", 120)
	ids := e.park("LayoutErr", e.orders, 3, func(i int, r *store.NewRecord) {
		r.Headers = append(r.Headers, springHeaders()...)
		r.ErrorMessage = "no customer for order " + long
		r.Value = []byte(`{"order":"` + long + `","lines":[1,2,3]}`)
	})
	e.park("Layout.Other.Error.Class."+long, e.orders, 2, func(i int, r *store.NewRecord) { r.Reason = store.ReasonTargetNotAllowed })
	bg := context.Background()
	rn, err := e.store.BeginRun(bg, e.routeName, "worker-layout")
	require.NoError(t, err)
	require.NoError(t, e.store.EndRun(bg, store.RunEnd{ID: rn.ID, Status: store.RunSucceeded,
		Ledger: []store.LedgerEntry{{RunID: rn.ID, Topic: e.orders + ".dlq", Partition: 0, From: 0, To: 1200, Redriven: 1195, Parked: 5}}}))
	// An audit trail and a job: a discard, and a bulk discard by ids.
	apiPost(t, e.url, fmt.Sprintf("/v1/records/%d/discard", ids[0]), api.DiscardRequest{Reason: "layout check"})
	one := int64(1)
	apiPost(t, e.url, "/v1/bulk/discard", api.BulkRequest{IDs: ids[1:2], ConfirmCount: &one, Reason: "layout check"})

	pages := []struct{ name, path, wait, nav string }{
		{"overview", "/ui/", "#parked-total", "Overview"},
		{"incidents", "/ui/incidents", "#incidents", "Incidents"},
		{"records", "/ui/records?status=parked", "#records", "Records"},
		{"record", fmt.Sprintf("/ui/records/%d", ids[2]), "#headers", "Records"},
		{"jobs", "/ui/jobs", "#jobs", "Jobs"},
		{"routes", "/ui/routes", "#routes", "Routes"},
		{"runs", "/ui/runs", "#run-" + fmt.Sprint(rn.ID), "Runs"},
		{"audit", "/ui/audit", "#audit", "Audit"},
		{"reference", "/ui/reference", "#spec-link", "API"},
		{"not-found", "/ui/no-such-page", "#error-status", ""},
	}
	for _, vp := range viewports {
		for _, scheme := range []string{"light", "dark"} {
			t.Run(fmt.Sprintf("%s/%s", vp.name, scheme), func(t *testing.T) {
				ctx := e.tab(t)
				do(t, ctx, emulate(vp, scheme), chromedp.Navigate(e.url+"/ui/login"), chromedp.WaitVisible("#token"))
				checkPage(t, ctx, vp, scheme, "login")
				saveShot(t, ctx, shots, fmt.Sprintf("login-%s-%s", vp.name, scheme))
				e.signIn(t, ctx, adminToken)
				for _, p := range pages {
					visit(t, ctx, e.url+p.path, p.wait)
					checkPage(t, ctx, vp, scheme, p.name)
					current := eval[[]string](t, ctx, `Array.from(document.querySelectorAll("header nav [aria-current=page]")).map(a => a.textContent)`)
					if p.nav == "" {
						require.Empty(t, current, "%s is in no section of the nav", p.name)
					} else {
						require.Equal(t, []string{p.nav}, current, "%s: the nav marks its section", p.name)
					}
					saveShot(t, ctx, shots, fmt.Sprintf("%s-%s-%s", p.name, vp.name, scheme))
				}
				checkFocus(t, ctx, "record")
			})
		}
	}
}

// saveShot writes a screenshot of the whole page to dir/name.png.
func saveShot(t *testing.T, ctx context.Context, dir, name string) {
	t.Helper()
	png := run(t, ctx, chromedp.FullScreenshot(100))
	require.NoError(t, os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644))
}

// apiPost sends body to the API as the admin and requires a success.
func apiPost(t *testing.T, base, path string, body any) {
	t.Helper()
	raw, err := json.Marshal(body)
	require.NoError(t, err)
	req, err := http.NewRequest(http.MethodPost, base+path, bytes.NewReader(raw))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+adminToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Less(t, resp.StatusCode, 300, "POST %s", path)
}
