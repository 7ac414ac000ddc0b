package console_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/api"
	"github.com/dlqops/dlq/internal/kafkaclient"
	"github.com/dlqops/dlq/internal/redrive"
	"github.com/dlqops/dlq/internal/routes"
	"github.com/dlqops/dlq/internal/testenv"
	"github.com/dlqops/dlq/internal/testenv/kafkatest"
)

// A route whose runs keep reading nothing is listed as one idle run whose start stays put:
// the API and the routes and runs pages show when its last run ended (which moves with
// every idle run), its schedule and its next run, so an active route does not look stuck.
func TestIdleRouteShowsLastRunEnd(t *testing.T) {
	e := newEnv(t)
	bootstrap := testenv.KafkaBootstrap(t)
	name := testenv.UniqueName("idle-route-")
	const schedule = "@every 1s"
	rc := routes.Config{Name: name, Topics: []string{kafkatest.CreateTopic(t, bootstrap, 1, nil)}, Schedule: schedule}
	rc.WithDefaults()
	eng, err := redrive.New([]routes.Config{rc}, redrive.Options{Store: e.store, Kafka: kafkaclient.Config{BootstrapServers: bootstrap},
		Log: zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel), Registry: prometheus.NewRegistry(),
		ControlPoll: 100 * time.Millisecond, ReadPath: testenv.ReadPath()})
	require.NoError(t, err)
	require.NoError(t, eng.Start(context.Background()))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		require.NoError(t, eng.Stop(ctx))
	})

	// The first idle run ended: its row is the one later idle runs fold into.
	var idleStart time.Time
	require.Eventually(t, func() bool {
		var runs api.RunList
		getJSON(t, e.url+"/v1/runs?route="+name, &runs)
		if len(runs.Runs) == 0 || runs.Runs[0].FinishedAt == nil {
			return false
		}
		idleStart = runs.Runs[0].StartedAt
		return true
	}, 2*time.Minute, 100*time.Millisecond, "the route never finished a run")
	mark := time.Now()

	// Later idle runs fold into that row (its start stays before mark) and the route's last
	// run end moves past mark.
	var route api.RouteControl
	require.Eventually(t, func() bool {
		route = routeNamed(t, e.url, name)
		return route.LastRunEndedAt != nil && route.LastRunEndedAt.After(mark)
	}, 2*time.Minute, 100*time.Millisecond, "the last run end never moved past %s", mark)
	var runs api.RunList
	getJSON(t, e.url+"/v1/runs?route="+name, &runs)
	require.Len(t, runs.Runs, 1, "consecutive idle runs are one row")
	require.Equal(t, idleStart, runs.Runs[0].StartedAt, "the idle row's start stays")
	require.True(t, idleStart.Before(mark))
	require.Equal(t, schedule, route.Schedule)
	require.NotNil(t, route.NextRunAt, "the worker reported its next run")

	ctx := e.tab(t)
	e.signIn(t, ctx, viewerToken)
	row := fmt.Sprintf(`tr.route-row[data-route=%q]`, name)
	for shot, page := range map[string]string{"route-timing-routes": "/ui/routes", "route-timing-runs": "/ui/runs?route=" + name} {
		do(t, ctx, chromedp.Navigate(e.url+page), chromedp.WaitVisible(row+" .last-run-ended time"))
		require.Equal(t, schedule, text(t, ctx, row+" .schedule"), page)
		ended := shownTime(t, ctx, row+" .last-run-ended time")
		require.True(t, ended.After(mark), "%s shows the last run ended at %s, not the idle row's start %s", page, ended, idleStart)
		require.False(t, shownTime(t, ctx, row+" .next-run time").IsZero(), page)
		e.shot(t, ctx, shot)
	}
}

// routeNamed is the API's listing of route name.
func routeNamed(t *testing.T, url, name string) api.RouteControl {
	t.Helper()
	var rl api.RouteList
	getJSON(t, url+"/v1/routes", &rl)
	for _, rc := range rl.Routes {
		if rc.Route == name {
			return rc
		}
	}
	t.Fatalf("route %s is not listed", name)
	return api.RouteControl{}
}

// getJSON decodes the API's answer to a viewer's GET of url into out.
func getJSON(t *testing.T, url string, out any) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+viewerToken)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, url)
	require.NoError(t, json.NewDecoder(resp.Body).Decode(out))
}

// shownTime is the instant a <time> element of the page stands for.
func shownTime(t *testing.T, ctx context.Context, sel string) time.Time {
	t.Helper()
	at, err := time.Parse(time.RFC3339Nano, eval[string](t, ctx, fmt.Sprintf(`document.querySelector(%q).getAttribute("datetime")`, sel)))
	require.NoError(t, err)
	return at
}
