package console_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// The pages below stand for the console's: a form whose answer comes late, as it does on
// a loaded machine, and a page that answers an error.
const (
	formPage = `<!doctype html><p id="status">old</p>
<form method="post" action="/next"><button id="go">Go</button></form>`
	nextPage = `<!doctype html><p id="status">new</p>`
)

func slowFormServer(t *testing.T) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /form", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(formPage))
	})
	mux.HandleFunc("POST /next", func(w http.ResponseWriter, _ *http.Request) {
		// The answer is late, so the old document stays up after the click.
		time.Sleep(500 * time.Millisecond)
		_, _ = w.Write([]byte(nextPage))
	})
	mux.HandleFunc("GET /busy", func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "too many requests: the console is rate limited", http.StatusTooManyRequests)
	})
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	return ts
}

func browserTab(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := chromedp.NewContext(newBrowser(t))
	ctx, cancelTimeout := context.WithTimeout(ctx, 3*time.Minute)
	t.Cleanup(func() {
		cancelTimeout()
		cancel()
	})
	return ctx
}

// A click that submits a form and the query after it see the document the form lands on,
// never the one being left (whose element matches the same selector).
func TestSubmitWaitsForTheNewDocument(t *testing.T) {
	ts := slowFormServer(t)
	ctx := browserTab(t)
	visit(t, ctx, ts.URL+"/form", "#status")
	submit(t, ctx, "#go", "#status")
	require.Equal(t, "new", text(t, ctx, "#status"))
}

// A page that answers an error fails the wait at once with its status and text, not at
// the tab's deadline.
func TestVisitReportsAnErrorPage(t *testing.T) {
	ts := slowFormServer(t)
	ctx := browserTab(t)
	err := visitErr(ctx, ts.URL+"/busy", "#records")
	require.Error(t, err)
	require.False(t, errors.Is(err, context.DeadlineExceeded), "failed on its own, not at the deadline: %v", err)
	require.ErrorContains(t, err, "429")
	require.ErrorContains(t, err, "the console is rate limited")
}
