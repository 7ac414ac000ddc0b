package console_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	specfile "github.com/dlqops/dlq/api"
	"github.com/dlqops/dlq/internal/api"
	"github.com/dlqops/dlq/internal/auth"
	"github.com/dlqops/dlq/internal/console"
	"github.com/dlqops/dlq/internal/jobs"
	"github.com/dlqops/dlq/internal/jobs/jobstest"
	"github.com/dlqops/dlq/internal/kafkaclient"
	"github.com/dlqops/dlq/internal/routes"
	"github.com/dlqops/dlq/internal/schemas"
	"github.com/dlqops/dlq/internal/store"
	"github.com/dlqops/dlq/internal/store/storetest"
	"github.com/dlqops/dlq/internal/testenv"
	"github.com/dlqops/dlq/internal/testenv/kafkatest"
)

// Tokens of the test server, by role; the scoped one sees only the orders topic's records.
const (
	viewerToken   = "viewer-WfjZHPzLMNIYrmd04rgAeMnAwUvYVDuN"
	operatorToken = "operator-gJPc9KrmkpKaRjNKvAyaEdJWvLb8gaxa"
	adminToken    = "admin-pGQ-AHIDgYNQY8I5mOnjKXaA9TK77OwH"
	scopedToken   = "scoped-9dgCVlni84lsDy9XIpxbiFhumDsTliIV"
)

// env is the console on the real stack: its store on a schema of its own, the REST API
// and the console on one test server, a job runner producing to real topics, and one
// headless Chromium.
type env struct {
	t            *testing.T
	store        *store.Store
	url          string
	orders       string // the original topic of most records
	other        string // an original topic the scoped token does not see
	replay       string // the configured replay topic
	browser      context.Context
	shotsMu      *sync.Mutex
	shotsDir     string
	routeName    string
	parkedOffset *atomic.Int64 // the DLQ offsets park gives, one sequence for every subtest
}

// newEnv builds the environment; configure adjusts the API's configuration.
func newEnv(t *testing.T, configure ...func(*api.Config)) *env {
	t.Helper()
	testenv.Integration(t)
	st := storetest.New(t)
	bootstrap := testenv.KafkaBootstrap(t)
	e := &env{t: t, store: st, orders: kafkatest.CreateTopic(t, bootstrap, 1, nil),
		other: testenv.UniqueName("other-"), replay: kafkatest.CreateTopic(t, bootstrap, 1, nil),
		routeName: testenv.UniqueName("route-"), shotsDir: t.ArtifactDir(), shotsMu: new(sync.Mutex),
		parkedOffset: new(atomic.Int64)}

	a, err := auth.New([]auth.Token{
		{Name: "vera", SHA256: auth.Hash(viewerToken), Role: auth.Viewer},
		{Name: "otto", SHA256: auth.Hash(operatorToken), Role: auth.Operator},
		{Name: "ada", SHA256: auth.Hash(adminToken), Role: auth.Admin},
		{Name: "sam", SHA256: auth.Hash(scopedToken), Role: auth.Admin, Topics: []string{e.orders}},
	})
	require.NoError(t, err)
	registry, err := schemas.New(schemas.Config{URL: testenv.SchemaRegistryURL(t)}, nil)
	require.NoError(t, err)
	t.Cleanup(registry.Close)
	cfg := api.Config{Store: st, Auth: a, ReplayTopics: []string{e.replay}, MaxBodyBytes: 1 << 20,
		Log: zerolog.Nop(), Registerer: prometheus.NewRegistry(), Schemas: registry}
	for _, c := range configure {
		c(&cfg)
	}
	apiSrv, err := api.New(cfg)
	require.NoError(t, err)
	t.Cleanup(apiSrv.Close) // before the store closes: the folded refusals' rows
	ui, err := console.New(console.Config{API: apiSrv, Auth: a, Audit: apiSrv, Spec: specfile.OpenAPI,
		ReplayTopics: []string{e.replay}, Log: zerolog.Nop()})
	require.NoError(t, err)
	mux := http.NewServeMux()
	mux.Handle("/v1/", apiSrv)
	mux.Handle("/ui/", ui)
	mux.Handle("GET /{$}", ui)
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	e.url = ts.URL

	// Small batches, so a rate-limited job shows its progress batch by batch.
	jobstest.StartRunner(t, jobs.Config{Store: st, Kafka: kafkaclient.Config{BootstrapServers: bootstrap},
		Routes: []routes.Config{jobstest.Route(e.routeName)}, Owner: "console-test", Poll: 50 * time.Millisecond,
		BatchSize: 5})
	require.NoError(t, st.RegisterRoutes(context.Background(), []string{e.routeName}, "test"))

	e.browser = newBrowser(t)
	return e
}

// newBrowser starts one headless Chromium for the test.
func newBrowser(t *testing.T) context.Context {
	t.Helper()
	testenv.Integration(t)
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatalf("chromium is not installed: `make test` installs it (scripts/stack.sh browser); %v", err)
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromium), chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("headless", true), chromedp.Flag("no-sandbox", true), chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-dev-shm-usage", true), chromedp.WindowSize(1400, 1000),
	}
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	browser, cancelBrowser := chromedp.NewContext(alloc)
	// Start the browser now, so its first page does not pay for the start.
	require.NoError(t, chromedp.Do(browser, chromedp.Navigate("about:blank")))
	t.Cleanup(func() {
		cancelBrowser()
		cancelAlloc()
	})
	return browser
}

// sub is the environment for subtest t: the same console, store, topics and browser, with
// the helpers that fail (park, status, count, paused) failing t, not the whole TestConsole.
func (e *env) sub(t *testing.T) *env {
	c := *e
	c.t = t
	return &c
}

// tab is a page in a browser context of its own: its own cookies, so its own sign-in.
func (e *env) tab(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := chromedp.NewContext(e.browser, chromedp.WithNewBrowserContext())
	ctx, cancelTimeout := context.WithTimeout(ctx, 3*time.Minute)
	t.Cleanup(func() {
		cancelTimeout()
		cancel()
	})
	return ctx
}

// signIn opens the sign-in page and signs in with token.
func (e *env) signIn(t *testing.T, ctx context.Context, token string) {
	t.Helper()
	visit(t, ctx, e.url+"/ui/login", "#token")
	do(t, ctx, chromedp.SendKeys("#token", token))
	submit(t, ctx, "#sign-in", "#principal")
}

// do runs browser steps and fails the test on the first error.
func do(t *testing.T, ctx context.Context, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	require.NoError(t, chromedp.Do(ctx, steps...))
}

// run runs one browser action that returns a value.
func run[T any](t *testing.T, ctx context.Context, a chromedp.Action[T]) T {
	t.Helper()
	v, err := chromedp.Run(ctx, a)
	require.NoError(t, err)
	return v
}

func text(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	return strings.TrimSpace(run(t, ctx, chromedp.Text(sel)))
}

func eval[T any](t *testing.T, ctx context.Context, js string) T {
	t.Helper()
	return run(t, ctx, chromedp.Evaluate[T](js))
}

// shot saves a screenshot of the whole page as <name>.png in the test's artifact
// directory (`go test -artifacts` keeps it; `make test` passes that flag).
func (e *env) shot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	png := run(t, ctx, chromedp.FullScreenshot(100))
	e.shotsMu.Lock()
	defer e.shotsMu.Unlock()
	require.NoError(t, os.WriteFile(filepath.Join(e.shotsDir, name+".png"), png, 0o644))
}

// startBulkReplay signs in as an admin on a new tab, replays the n parked records of
// error class class through the records page's bulk form at rate records per second, and
// returns the tab once the job's page shows it running.
func (e *env) startBulkReplay(t *testing.T, class string, n, rate int) context.Context {
	t.Helper()
	ctx := e.tab(t)
	e.signIn(t, ctx, adminToken)
	visit(t, ctx, e.url+"/ui/records?status=parked&error_class="+class, "#bulk")
	do(t, ctx, chromedp.Click("#bulk summary"), chromedp.WaitVisible("#bulk-dry-run"),
		chromedp.Clear("#bulk-rate"), chromedp.SendKeys("#bulk-rate", strconv.Itoa(rate)))
	submit(t, ctx, "#bulk-dry-run", "#confirm-count")
	do(t, ctx, chromedp.SendKeys("#confirm-count", strconv.Itoa(n)))
	submit(t, ctx, "#confirm", "#job-status")
	waitJobPage(t, ctx, "running")
	return ctx
}

// park stores records of original topic topic with error class class (the tests select
// their own records by it) and returns their ids in insertion order.
func (e *env) park(class, topic string, n int, mod ...func(i int, r *store.NewRecord)) []int64 {
	e.t.Helper()
	// Within the broker's retention (7 days): it deletes older records soon after they are
	// replayed (a segment per batch of them), before consume reads them.
	since := time.Now().Add(-time.Hour).Truncate(time.Millisecond).UTC()
	recs := make([]store.NewRecord, n)
	for i := range recs {
		recs[i] = store.NewRecord{
			DLQ:        store.Coordinates{Topic: topic + ".dlq", Partition: 0, Offset: e.parkedOffset.Add(1)},
			Origin:     store.Origin{Topic: topic, Partition: 0, Offset: int64(i)},
			Key:        fmt.Appendf(nil, "%s-key-%d", class, i),
			Value:      fmt.Appendf(nil, `{"class":%q,"n":%d}`, class, i),
			Headers:    []store.Header{{Key: "retryCount", Value: []byte("5")}, {Key: "originalTopic", Value: []byte(topic)}},
			Timestamp:  since.Add(time.Duration(i) * time.Millisecond),
			RetryCount: 5, ErrorClass: class, ErrorMessage: "downstream timed out",
			Reason: store.ReasonExhausted, Status: store.StatusParked, Route: e.routeName,
		}
		for _, m := range mod {
			m(i, &recs[i])
		}
	}
	_, err := e.store.StoreBatch(context.Background(), recs, nil)
	require.NoError(e.t, err)
	rows, err := e.store.ListAfter(context.Background(), store.Filter{ErrorClass: class}, 0, store.MaxPageSize)
	require.NoError(e.t, err)
	ids := make([]int64, len(rows))
	for i, r := range rows {
		ids[i] = r.ID
	}
	require.Len(e.t, ids, n)
	return ids
}

func (e *env) status(id int64) store.Status {
	e.t.Helper()
	rec, err := e.store.Get(context.Background(), id)
	require.NoError(e.t, err)
	return rec.Status
}

func (e *env) count(f store.Filter) int64 {
	e.t.Helper()
	n, err := e.store.Count(context.Background(), f)
	require.NoError(e.t, err)
	return n
}

// consume reads topic (one partition) from the beginning until it has seen want records
// that match, and returns them; it fails the test after a minute.
func (e *env) consume(t *testing.T, topic string, want int, match func(*kafka.Message) bool) []*kafka.Message {
	t.Helper()
	c, err := kafka.NewConsumer(&kafka.ConfigMap{"bootstrap.servers": testenv.KafkaBootstrap(t),
		"group.id": testenv.UniqueName("console-"), "enable.auto.commit": false})
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.Assign([]kafka.TopicPartition{{Topic: &topic, Partition: 0, Offset: kafka.OffsetBeginning}}))
	var out []*kafka.Message
	deadline := time.Now().Add(time.Minute)
	for len(out) < want {
		require.True(t, time.Now().Before(deadline), "found %d of %d records on %s", len(out), want, topic)
		m, err := c.ReadMessage(time.Second)
		if err == nil && match(m) {
			out = append(out, m)
		}
	}
	return out
}
