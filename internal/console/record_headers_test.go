package console_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/net/html"

	"github.com/dlqops/dlq/internal/api"
	"github.com/dlqops/dlq/internal/store"
)

// A Spring Kafka dead letter reads on its record page: the stack-trace header folded
// behind its first line and, opened, one frame a line; the original partition and offset
// (big-endian numbers) decoded beside their hex; and the record's actions come first, not
// under its payload and headers.
func TestRecordPageReadsSpringHeaders(t *testing.T) {
	var hs []api.Header
	for _, h := range springHeaders() {
		hs = append(hs, api.Header{Key: h.Key, Value: bytesOf(h.Value)})
	}
	detail := api.RecordDetail{Record: api.Record{ID: 7, Status: store.StatusParked, ErrorClass: "java.lang.IllegalStateException"},
		Key: bytesOf([]byte("order-42")), Value: bytesOf([]byte(`{"order":42}`)), Headers: hs}
	fake := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		var answer any = api.AuditList{}
		if r.URL.Path == "/v1/records/7" {
			answer = detail
		}
		require.NoError(t, json.NewEncoder(w).Encode(answer))
	})
	doc := signedInConsole(t, fake)("/ui/records/7")

	rows := map[string]*html.Node{}
	var order []string
	walk(doc, func(n *html.Node) {
		if n.Type != html.ElementNode {
			return
		}
		if id := attr(n, "id"); id != "" {
			order = append(order, id)
		}
		if n.Data == "tr" && attr(n, "class") == "header-row" {
			rows[textOf(cells(n)[1])] = n // by its name
		}
	})
	trace := rows["kafka_dlt-exception-stacktrace"]
	require.NotNil(t, trace)
	var folded, pre *html.Node
	walk(trace, func(n *html.Node) {
		switch {
		case n.Type == html.ElementNode && n.Data == "details":
			folded = n
		case n.Type == html.ElementNode && n.Data == "pre":
			pre = n
		}
	})
	require.NotNil(t, folded, "the stack trace is folded")
	require.Nil(t, findAttr(folded, "open"), "and closed at first")
	require.NotNil(t, pre, "opened, it is preformatted")
	require.Equal(t, springStack, textOf(pre), "every line break kept")
	require.Contains(t, textOf(trace), "ListenerExecutionFailedException: Listener failed (5 lines)", "folded behind its first line")

	require.Equal(t, "0x00000004 = 4", strings.Join(strings.Fields(textOf(cells(rows["kafka_dlt-original-partition"])[2])), " "))
	require.Equal(t, "0x000000000012d687 = 1234567", strings.Join(strings.Fields(textOf(cells(rows["kafka_dlt-original-offset"])[2])), " "))

	actions, coordinates, headers := slices.Index(order, "replay-form"), slices.Index(order, "coordinates"), slices.Index(order, "headers")
	require.NotEqual(t, -1, actions, "an operator is offered the actions")
	require.Less(t, actions, coordinates, "the actions come first")
	require.Less(t, actions, headers)
}

// cells are the cells of table row tr.
func cells(tr *html.Node) []*html.Node {
	var out []*html.Node
	for c := tr.FirstChild; c != nil; c = c.NextSibling {
		if c.Type == html.ElementNode && (c.Data == "td" || c.Data == "th") {
			out = append(out, c)
		}
	}
	return out
}

// textOf is the text of n and its descendants.
func textOf(n *html.Node) string {
	var b strings.Builder
	walk(n, func(c *html.Node) {
		if c.Type == html.TextNode {
			b.WriteString(c.Data)
		}
	})
	return b.String()
}

// findAttr is n's attribute key, nil when it has none.
func findAttr(n *html.Node, key string) *html.Attribute {
	for i := range n.Attr {
		if n.Attr[i].Key == key {
			return &n.Attr[i]
		}
	}
	return nil
}

// A record parked target_not_allowed names the rule that parked it: its route's
// allowed_targets, which its original topic matches none of.
func TestRecordPageNamesTheParkingRule(t *testing.T) {
	details := map[string]api.RecordDetail{
		"/v1/records/8": {Record: api.Record{ID: 8, Status: store.StatusParked, Reason: store.ReasonTargetNotAllowed, Route: "orders-route",
			Original: api.Origin{Topic: "payments"}}, Key: bytesOf([]byte("k")), Value: bytesOf([]byte("v"))},
		"/v1/records/9": {Record: api.Record{ID: 9, Status: store.StatusParked, Reason: store.ReasonExhausted, Route: "orders-route",
			Original: api.Origin{Topic: "payments"}}, Key: bytesOf([]byte("k")), Value: bytesOf([]byte("v"))},
	}
	fake := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		var answer any = api.AuditList{}
		if d, ok := details[r.URL.Path]; ok {
			answer = d
		}
		require.NoError(t, json.NewEncoder(w).Encode(answer))
	})
	page := signedInConsole(t, fake)
	require.Equal(t, "the allowed_targets of route orders-route: its original topic payments matches none of them, so it leaves only by a replay to an allowed topic",
		byID(t, page("/ui/records/8"), "parking-rule"))
	var rule bool
	walk(page("/ui/records/9"), func(n *html.Node) { rule = rule || attr(n, "id") == "parking-rule" })
	require.False(t, rule, "an exhausted record was parked by no delivery rule")
}
