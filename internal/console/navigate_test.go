package console_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// submit clicks sel, which navigates (a form's button or a link), waits until the browser
// has loaded the document it navigates to, and then until waitSel is visible on it.
func submit(t *testing.T, ctx context.Context, sel, waitSel string) {
	t.Helper()
	require.NoError(t, submitErr(ctx, sel, waitSel))
}

// visit opens url and waits until waitSel is visible on it.
func visit(t *testing.T, ctx context.Context, url, waitSel string) {
	t.Helper()
	require.NoError(t, visitErr(ctx, url, waitSel))
}

// submitErr is submit that returns its error. Waiting for the load first is what keeps
// the next query off the document being left: an element of it may match waitSel, and
// its node ids die with it, so the browser refuses them ("Could not find node with given
// id") when the new document replaces it mid-query.
func submitErr(ctx context.Context, sel, waitSel string) error {
	resp, err := chromedp.RunResponse(ctx, chromedp.Click(sel))
	if err != nil {
		return fmt.Errorf("click %s: %w", sel, err)
	}
	return landed(ctx, resp, waitSel)
}

func visitErr(ctx context.Context, url, waitSel string) error {
	resp, err := chromedp.Run(ctx, chromedp.NavigateResponse(url))
	if err != nil {
		return fmt.Errorf("open %s: %w", url, err)
	}
	return landed(ctx, resp, waitSel)
}

// landed waits until waitSel is visible on the document that resp answered. An answer
// that is an error and does not hold waitSel (a 429 or a 5xx under load) fails at once
// with its status and text, instead of waiting out the tab's deadline for an element
// that will never come.
func landed(ctx context.Context, resp *network.Response, waitSel string) error {
	if resp == nil {
		return fmt.Errorf("no document loaded (waiting for %s)", waitSel)
	}
	if resp.Status >= 400 {
		quoted, err := json.Marshal(waitSel)
		if err != nil {
			return err
		}
		found, err := chromedp.Run(ctx, chromedp.Evaluate[bool]("document.querySelector("+string(quoted)+") !== null"))
		if err != nil {
			return err
		}
		if !found {
			body, err := chromedp.Run(ctx, chromedp.Evaluate[string]("document.body ? document.body.innerText : ''"))
			if err != nil {
				return err
			}
			return fmt.Errorf("%s answered %d %s, without %s: %s", resp.URL, resp.Status, resp.StatusText, waitSel, body)
		}
	}
	return chromedp.Do(ctx, chromedp.WaitVisible(waitSel))
}
