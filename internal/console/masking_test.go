package console_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/api"
	"github.com/dlqops/dlq/internal/masking"
	"github.com/dlqops/dlq/internal/store"
)

// TestMaskedRecordInConsole: in real Chromium, every role and scope sees the configured
// fields of a record masked (the console reads the API as the signed-in token); an
// operator's edit is formatted and validated in the browser, confirmed on its diff, sent
// with the masked fields as stored, and shown, escaped, in the record's history.
func TestMaskedRecordInConsole(t *testing.T) {
	const card, secret, big = "4111111111111111", "Bearer s3cr3t", "12345678901234567890123"
	key := filepath.Join(t.TempDir(), "mask.key")
	require.NoError(t, os.WriteFile(key, []byte(strings.Repeat("k", 32)), 0o600))
	m, err := masking.New(masking.Config{JSONPaths: []string{"card.number"}, Headers: []string{"authorization"}, HashKeyFile: key})
	require.NoError(t, err)
	e := newEnv(t, func(c *api.Config) { c.Masking = m })
	id := e.park("Masked", e.orders, 1, func(_ int, r *store.NewRecord) {
		r.Value = []byte(`{"card":{"number":"` + card + `"},"name":"Ann","amount":` + big + `}`)
		r.Headers = append(r.Headers, store.Header{Key: "authorization", Value: []byte(secret)})
	})[0]
	placeholder := m.Placeholder([]byte(card))
	recordURL := fmt.Sprintf("%s/ui/records/%d", e.url, id)

	for tok, mayUnmask := range map[string]bool{viewerToken: false, operatorToken: false, adminToken: true, scopedToken: true} {
		ctx := e.tab(t)
		e.signIn(t, ctx, tok)
		visit(t, ctx, recordURL, "#value-payload")
		require.Contains(t, text(t, ctx, "#value-payload"), placeholder)
		html := eval[string](t, ctx, `document.documentElement.outerHTML`)
		require.NotContains(t, html, card, "no clear value anywhere on the page")
		require.NotContains(t, html, "s3cr3t")
		require.Equal(t, mayUnmask, eval[bool](t, ctx, `document.getElementById("unmask") !== null`))
		if !mayUnmask {
			do(t, ctx, chromedp.Navigate(recordURL+"?unmask=true"), chromedp.WaitReady("body"))
			require.NotContains(t, eval[string](t, ctx, `document.documentElement.outerHTML`), card, "asking is not enough")
			continue
		}
		submit(t, ctx, "#unmask", "#value-payload")
		require.Contains(t, text(t, ctx, "#value-payload"), card, "in clear, on request")
	}
	unmasked, err := e.store.SearchAudit(context.Background(), store.AuditFilter{Action: "unmask_record", RecordID: id}, 0, 10)
	require.NoError(t, err)
	require.Len(t, unmasked, 2, "each unmask in the console is audited")

	ctx := e.tab(t)
	e.signIn(t, ctx, operatorToken)
	do(t, ctx, chromedp.Navigate(recordURL), chromedp.WaitVisible("#edit"),
		chromedp.Click("#edit summary"), chromedp.WaitVisible("#edit-value-format"))
	require.Equal(t, "Valid JSON.", text(t, ctx, "#edit-value-check"))
	do(t, ctx, chromedp.Click("#edit-value-format"))
	formatted := run(t, ctx, chromedp.Value("#edit-value"))
	require.Contains(t, formatted, "\n  \"name\": \"Ann\",\n", "Format indents")
	require.Contains(t, formatted, `"amount": `+big, "Format keeps every digit of a number")

	do(t, ctx, chromedp.SendKeys("#edit-value", "}"))
	require.Contains(t, text(t, ctx, "#edit-value-check"), "Not valid JSON")
	require.True(t, eval[bool](t, ctx, `document.getElementById("edit-value-format").disabled`))
	edited := strings.Replace(formatted, `"Ann"`, `"Anna"`, 1)
	do(t, ctx, chromedp.SetValue("#edit-value", edited))
	headers := run(t, ctx, chromedp.Value("#edit-headers"))
	require.Contains(t, headers, "authorization: "+m.Placeholder([]byte(secret)))
	do(t, ctx, chromedp.SetValue("#edit-headers", headers+"\nnote: <img src=x onerror=\"window.pwned=1\">"))
	e.shot(t, ctx, "record-edit-masked")

	submit(t, ctx, "#edit-replay", "#confirm-replay")
	diff := text(t, ctx, ".value-diff")
	require.Contains(t, diff, `-   "name": "Ann",`)
	require.Contains(t, diff, `+   "name": "Anna",`)
	require.NotContains(t, eval[string](t, ctx, `document.documentElement.outerHTML`), card)
	e.shot(t, ctx, "record-edit-masked-confirm")
	submit(t, ctx, "#confirm-replay", "#job-status")
	waitJobPage(t, ctx, "succeeded")

	sent := e.consume(t, e.orders, 1, func(msg *kafka.Message) bool { return strings.Contains(string(msg.Value), "Anna") })[0]
	require.Equal(t, strings.Replace(edited, placeholder, card, 1), string(sent.Value), "the masked card is sent as stored")
	for _, h := range sent.Headers {
		if h.Key == "authorization" {
			require.Equal(t, secret, string(h.Value))
		}
	}
	rec, err := e.store.Get(context.Background(), id)
	require.NoError(t, err)
	require.Equal(t, store.StatusReplayed, rec.Status)

	visit(t, ctx, recordURL, ".history-edit")
	history := text(t, ctx, ".history-edit")
	require.Contains(t, history, `+   "name": "Anna",`, "the history shows what the edit sent")
	require.Contains(t, history, `<img src=x onerror="window.pwned=1">`, "as text")
	require.NotContains(t, history, card)
	require.False(t, eval[bool](t, ctx, `window.pwned === 1`))
	e.shot(t, ctx, "record-history-edit")
}
