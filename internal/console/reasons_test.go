package console_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/net/html"

	"github.com/dlqops/dlq/internal/api"
	"github.com/dlqops/dlq/internal/store"
)

// The records page's reason filter offers every reason a record can have, so that an
// operator finds, for example, the records parked not_retryable without knowing the word.
func TestRecordsReasonFilterOffersEveryReason(t *testing.T) {
	fake := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		var answer any = api.AuditList{}
		if r.URL.Path == "/v1/records" {
			answer = api.RecordPage{}
		}
		require.NoError(t, json.NewEncoder(w).Encode(answer))
	})
	doc := signedInConsole(t, fake)("/ui/records")
	var offered []store.Reason
	walk(doc, func(n *html.Node) {
		if n.Type == html.ElementNode && n.Data == "datalist" && attr(n, "id") == "reasons" {
			for o := n.FirstChild; o != nil; o = o.NextSibling {
				if o.Type == html.ElementNode && o.Data == "option" {
					offered = append(offered, store.Reason(attr(o, "value")))
				}
			}
		}
	})
	require.ElementsMatch(t, store.Reasons, offered)
}
