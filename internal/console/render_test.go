package console_test

import (
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
	"golang.org/x/net/html"

	specfile "github.com/dlqops/dlq/api"
	"github.com/dlqops/dlq/internal/api"
	"github.com/dlqops/dlq/internal/auth"
	"github.com/dlqops/dlq/internal/console"
	"github.com/dlqops/dlq/internal/store"
)

// The record page renders what the API answers: JSON pretty-printed, a Schema Registry
// wire-format value as its schema id and a hex dump of the rest, header names and values
// that are not text as hex, and attacker text as text, never markup. The API is a fake
// answering one record, so the rendering is checked without the stack; TestConsole's
// RecordRendering checks the same page in a browser on the real API.
func TestRecordPageRendersWhatTheAPIAnswers(t *testing.T) {
	wire := []byte{0, 0, 0, 1, 44, 0x02, 0xff, 0xfe, 0x10}
	records := map[string]api.RecordDetail{
		"/v1/records/1": {Record: api.Record{ID: 1, Status: store.StatusParked, ErrorClass: "JSONValue"},
			Key: bytesOf([]byte("order-42")), Value: bytesOf([]byte(`{"order":{"id":42,"lines":[1,2]}}`))},
		"/v1/records/2": {Record: api.Record{ID: 2, Status: store.StatusParked, ErrorClass: "BinaryValue"},
			Key: bytesOf([]byte{0xde, 0xad, 0xbe, 0xef}), Value: bytesOf(wire),
			Headers: []api.Header{{Key: "bin\x00\x01", Value: bytesOf([]byte{0, 1, 2})}, {Key: "nullvalue", Value: api.Bytes{Null: true}}}},
		"/v1/records/3": {Record: api.Record{ID: 3, Status: store.StatusParked, ErrorClass: hostileClass, ErrorMessage: hostileError},
			Key: bytesOf([]byte(hostileKey)), Value: bytesOf([]byte(hostileValue)),
			Headers:  []api.Header{{Key: hostileHeader, Value: bytesOf([]byte(hostileValue))}},
			Envelope: api.Envelope{ConsumerGroup: hostileKey}},
	}
	fake := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		var answer any = api.AuditList{}
		if r.URL.Path != "/v1/audit" {
			d, ok := records[r.URL.Path]
			if !ok {
				w.WriteHeader(http.StatusNotFound)
				answer = api.Problem{Status: http.StatusNotFound, Title: "Not found"}
			} else {
				answer = d
			}
		}
		require.NoError(t, json.NewEncoder(w).Encode(answer))
	})
	page := signedInConsole(t, fake)

	doc := page("/ui/records/1")
	require.Equal(t, "{\n  \"order\": {\n    \"id\": 42,\n    \"lines\": [\n      1,\n      2\n    ]\n  }\n}", byID(t, doc, "value-payload"),
		"JSON is pretty-printed")
	require.Equal(t, "order-42", byID(t, doc, "key-payload"))

	doc = page("/ui/records/2")
	require.Equal(t, "schema id 300", byID(t, doc, "value-schema"))
	require.Contains(t, byID(t, doc, "value-payload"), "02 ff fe 10", "the data after the wire-format prefix, as hex")
	require.Contains(t, byID(t, doc, "key-payload"), "de ad be ef")
	require.Contains(t, byID(t, doc, "headers"), "0x62696e0001", "a header name that is not printable text is shown as hex")
	require.Contains(t, byID(t, doc, "headers"), "0x000102")
	require.Contains(t, byID(t, doc, "headers"), "null")

	doc = page("/ui/records/3")
	require.Equal(t, hostileValue, byID(t, doc, "value-payload"))
	require.Equal(t, hostileKey, byID(t, doc, "key-payload"))
	require.Equal(t, hostileError, byID(t, doc, "error-text"))
	require.Equal(t, hostileClass, byID(t, doc, "error-class"))
	require.Equal(t, hostileKey, byID(t, doc, "consumer-group"), "the failing group a header names, as text")
	require.Contains(t, byID(t, doc, "headers"), hostileHeader)
	var scripts []string
	walk(doc, func(n *html.Node) {
		if n.Type != html.ElementNode {
			return
		}
		switch n.Data {
		case "img", "svg":
			t.Errorf("attacker text became markup: <%s>", n.Data)
		case "script":
			scripts = append(scripts, attr(n, "src"))
		}
		for _, a := range n.Attr {
			if a.Key == "onerror" || a.Key == "onload" {
				t.Errorf("attacker text became an attribute: %s=%q", a.Key, a.Val)
			}
		}
	})
	require.Equal(t, []string{"/ui/static/console.js"}, scripts, "the console's own script only")
}

func bytesOf(b []byte) api.Bytes { return api.Bytes{Base64: base64.StdEncoding.EncodeToString(b)} }

// noSignInAudit stands in for the API server's audit of refused sign-ins: this page
// test signs in with a valid token, so nothing is refused.
type noSignInAudit struct{}

func (noSignInAudit) AuditSignIn(addr, outcome, detail string) {}

// signedInConsole serves the console on fakeAPI, signs in as an operator, and returns a
// function that fetches a page with that session and parses it.
func signedInConsole(t *testing.T, fakeAPI http.Handler) func(path string) *html.Node {
	t.Helper()
	a, err := auth.New([]auth.Token{{Name: "otto", SHA256: auth.Hash(operatorToken), Role: auth.Operator}})
	require.NoError(t, err)
	ui, err := console.New(console.Config{API: fakeAPI, Auth: a, Audit: noSignInAudit{}, Spec: specfile.OpenAPI, Log: zerolog.Nop()})
	require.NoError(t, err)
	ts := httptest.NewServer(ui)
	t.Cleanup(ts.Close)
	client := ts.Client()
	client.Jar, err = cookiejar.New(nil)
	require.NoError(t, err)
	client.Timeout = time.Minute

	resp, err := client.Get(ts.URL + "/ui/login")
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	resp.Body.Close()
	m := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindSubmatch(body)
	require.NotNil(t, m)
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err = client.PostForm(ts.URL+"/ui/login", url.Values{"csrf": {string(m[1])}, "token": {operatorToken}})
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)

	return func(path string) *html.Node {
		t.Helper()
		resp, err := client.Get(ts.URL + path)
		require.NoError(t, err)
		defer resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode, path)
		doc, err := html.Parse(resp.Body)
		require.NoError(t, err)
		return doc
	}
}

// byID is the text of the element with id, as the browser's textContent reads it.
func byID(t *testing.T, doc *html.Node, id string) string {
	t.Helper()
	var found *html.Node
	walk(doc, func(n *html.Node) {
		if found == nil && n.Type == html.ElementNode && attr(n, "id") == id {
			found = n
		}
	})
	require.NotNil(t, found, "no element #%s", id)
	var b strings.Builder
	walk(found, func(n *html.Node) {
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
		}
	})
	return strings.TrimSpace(b.String())
}

func walk(n *html.Node, visit func(*html.Node)) {
	visit(n)
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		walk(c, visit)
	}
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

// A cancelled job's page says how many records were still in the producer when the cancel
// was noticed (they are counted in Done once they reached the target), and a job not
// cancelled while it ran shows no such row.
func TestJobPageSaysWhatWasInFlightAtCancel(t *testing.T) {
	inFlight := int64(1500)
	jobs := map[string]api.Job{
		"/v1/jobs/7": {ID: 7, Kind: store.JobReplay, Status: store.JobCancelled, Total: 10000, Done: 3500, InFlightAtCancel: &inFlight},
		"/v1/jobs/8": {ID: 8, Kind: store.JobReplay, Status: store.JobSucceeded, Total: 10, Done: 10},
	}
	fake := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		j, ok := jobs[r.URL.Path]
		if !ok {
			w.WriteHeader(http.StatusNotFound)
			require.NoError(t, json.NewEncoder(w).Encode(api.Problem{Status: http.StatusNotFound, Title: "Not found"}))
			return
		}
		require.NoError(t, json.NewEncoder(w).Encode(j))
	})
	page := signedInConsole(t, fake)

	doc := page("/ui/jobs/7")
	require.Equal(t, "3500", byID(t, doc, "job-done"))
	require.Equal(t, "1500", byID(t, doc, "job-in-flight-at-cancel"))
	var found bool
	walk(page("/ui/jobs/8"), func(n *html.Node) { found = found || attr(n, "id") == "job-in-flight-at-cancel" })
	require.False(t, found, "a job not cancelled while it ran has no in-flight row")
}
