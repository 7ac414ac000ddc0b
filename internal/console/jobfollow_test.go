package console_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// A job page that follows its running job does not reload itself over the operator's
// cancel: the reload cancelled the navigation to the answer, whose one-time flash the
// server had already handed out, so the page showed the job cancelled and no "Job
// cancelled." (TestConsole/CancelJob failed so when the answer came later than the
// page's next poll). Here the answer is held back in the browser for several polls.
func TestJobPageKeepsTheAnswerToItsCancel(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const n = 120 // a minute at 2 per second: the job runs while the answer is held
	e.park("FollowErr", e.orders, n)
	ctx := e.startBulkReplay(t, "FollowErr", n, 2)
	jobPage := run(t, ctx, chromedp.Location())

	// Pages (not the script's polls) of the job are held back once the server answered.
	paused := chromedp.Events(ctx, fetch.RequestPaused)
	_, err := chromedp.Call(ctx, fetch.Enable, fetch.EnableParams{Patterns: []*fetch.RequestPattern{{
		URLPattern: e.url + "/ui/jobs/*", ResourceType: network.ResourceTypeDocument, RequestStage: fetch.RequestStageResponse}}})
	require.NoError(t, err)
	go func() {
		for ev, err := range paused {
			if err != nil {
				return
			}
			go func() {
				if ev.Request.Method == http.MethodGet && ev.Request.URL == jobPage {
					time.Sleep(5 * time.Second) // the page polls every second meanwhile
				}
				_, _ = chromedp.Call(ctx, fetch.ContinueRequest, fetch.ContinueRequestParams{RequestID: ev.RequestID})
			}()
		}
	}()

	do(t, ctx, chromedp.Click("#cancel"))
	waitJobPage(t, ctx, "cancelled")
	flash := eval[string](t, ctx, `(document.querySelector("#flash") || {textContent: ""}).textContent.trim()`)
	require.Equal(t, "Job cancelled.", flash, "the page that answers the cancel is the one shown")
}
