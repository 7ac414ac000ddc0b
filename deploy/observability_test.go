package deploy

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/dlqops/dlq/internal/testenv"
	"github.com/dlqops/dlq/internal/testenv/kafkatest"
	"github.com/dlqops/dlq/internal/testenv/proctest"
)

const (
	alertsFile    = "observability/alerts.yaml"
	dashboardFile = "observability/dashboard.json"
)

// tool returns the path of a Prometheus binary; `make test` installs Debian's prometheus
// package (scripts/stack.sh need) when it is missing.
func tool(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	require.NoError(t, err, "%s is missing: scripts/stack.sh need %s:prometheus", name, name)
	return p
}

func TestAlertRules(t *testing.T) {
	promtool := tool(t, "promtool")
	out, err := exec.Command(promtool, "check", "rules", alertsFile).CombinedOutput()
	require.NoError(t, err, "promtool check rules:\n%s", out)
	out, err = exec.Command(promtool, "test", "rules", "observability/alerts_test.yaml").CombinedOutput()
	require.NoError(t, err, "promtool test rules:\n%s", out)
}

// dashboardQueries returns every PromQL expression of the dashboard with Grafana's
// variables replaced by values Prometheus accepts.
func dashboardQueries(t *testing.T) []string {
	t.Helper()
	raw, err := os.ReadFile(dashboardFile)
	require.NoError(t, err)
	var d struct {
		Panels []struct {
			Title   string
			Targets []struct{ Expr string }
		}
		Templating struct{ List []struct{ Definition string } }
	}
	require.NoError(t, json.Unmarshal(raw, &d))
	vars := strings.NewReplacer("$route", ".*", "$__rate_interval", "1m")
	var exprs []string
	for _, p := range d.Panels {
		require.NotEmpty(t, p.Targets, "panel %q has no query", p.Title)
		for _, tg := range p.Targets {
			exprs = append(exprs, vars.Replace(tg.Expr))
		}
	}
	require.Len(t, d.Templating.List, 2)
	// label_values(metric, label) is Grafana's, not PromQL: its metric must exist.
	m := regexp.MustCompile(`^label_values\((\w+), \w+\)$`).FindStringSubmatch(d.Templating.List[1].Definition)
	require.NotNil(t, m, d.Templating.List[1].Definition)
	return append(exprs, m[1])
}

// Every dashboard query parses as PromQL: promtool checks them as recording rules.
func TestDashboardQueriesParse(t *testing.T) {
	var rules []map[string]string
	for i, e := range dashboardQueries(t) {
		rules = append(rules, map[string]string{"record": fmt.Sprintf("dashboard:query_%d", i), "expr": e})
	}
	raw, err := yaml.Marshal(map[string]any{"groups": []any{map[string]any{"name": "dashboard", "rules": rules}}})
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "dashboard-rules.yaml")
	require.NoError(t, os.WriteFile(path, raw, 0o600))
	out, err := exec.Command(tool(t, "promtool"), "check", "rules", path).CombinedOutput()
	require.NoError(t, err, "a dashboard query does not parse:\n%s", out)
}

// metricNames are the series names an expression reads (ours, the Go and process
// collectors', and up).
func metricNames(expr string) []string {
	return regexp.MustCompile(`\b(?:dlq|process|go)_[a-z0-9_]+\b|\bup\b`).FindAllString(expr, -1)
}

// exportedOnlyAfterTheirEvent are series the worker creates at their first event, which
// this test does not cause: a transient failure (internal/redrive's fault tests inject
// them), a record stored for backoff (the route here has none) and a cause's breaker
// opening (a series that exists only while one is open; internal/redrive's cause-breaker
// test opens one). The test checks that the worker binary holds the name.
var exportedOnlyAfterTheirEvent = []string{"dlq_worker_errors_total", "dlq_worker_scheduled_total",
	"dlq_worker_cause_breaker_state"}

// Prometheus scrapes the real binaries with the alert rules loaded: a record parked by the
// worker fires DLQRecordsParked, every dashboard query is answered, and every series the
// dashboard and the alerts name is one the binaries export.
func TestObservabilityOnRealBinaries(t *testing.T) {
	prometheus := tool(t, "prometheus")
	bootstrap := testenv.KafkaBootstrap(t)
	dbURL := testenv.Schema(t)
	dlq := kafkatest.CreateTopic(t, bootstrap, 1, nil)
	target := kafkatest.CreateTopic(t, bootstrap, 1, nil)
	dir := t.TempDir()
	require.NoError(t, proctest.Build(dir, "github.com/dlqops/dlq/cmd/dlq-worker", "github.com/dlqops/dlq/cmd/dlq-admin"))

	// The binaries bind ports the kernel picks and log them; Prometheus takes a port number.
	promAddr := testenv.ReserveAddr(t)
	writeYAML(t, dir, "worker.yaml", map[string]any{
		"log": map[string]any{"format": "json"}, "http": map[string]any{"listen": "127.0.0.1:0"},
		"database": map[string]any{"url": dbURL, "migrate_on_start": true},
		"kafka":    map[string]any{"bootstrap_servers": bootstrap},
		"routes":   []any{map[string]any{"name": "obs", "topics": []string{dlq}, "schedule": "* * * * * *", "backoff": "none"}},
	})
	token := "obs-operator-nYoPRFZaDoJd5PlheEtDhxXyGVEFj-nc"
	writeYAML(t, dir, "admin.yaml", map[string]any{
		"log": map[string]any{"format": "json"}, "http": map[string]any{"listen": "127.0.0.1:0"},
		"database":      map[string]any{"url": dbURL, "migrate_on_start": true},
		"tokens":        []any{map[string]any{"name": "obs", "role": "operator", "sha256": sha256Hex(token)}},
		"replay_topics": []string{target},
	})
	proctest.StartService(t, filepath.Join(dir, "dlq-worker.log"), nil, 30*time.Second, filepath.Join(dir, "dlq-worker"), "run", "--config", filepath.Join(dir, "worker.yaml"))
	workerAddr := proctest.ServingAddr(t, filepath.Join(dir, "dlq-worker.log"), 2*time.Minute)
	waitHTTP(t, "http://"+workerAddr+"/readyz")
	proctest.StartService(t, filepath.Join(dir, "dlq-admin.log"), nil, 30*time.Second, filepath.Join(dir, "dlq-admin"), "serve", "--config", filepath.Join(dir, "admin.yaml"))
	adminAddr := proctest.ServingAddr(t, filepath.Join(dir, "dlq-admin.log"), 2*time.Minute)
	waitHTTP(t, "http://"+adminAddr+"/readyz")

	rules, err := filepath.Abs(alertsFile)
	require.NoError(t, err)
	writeYAML(t, dir, "prometheus.yml", map[string]any{
		"global":     map[string]any{"scrape_interval": "1s", "evaluation_interval": "1s"},
		"rule_files": []string{rules},
		"scrape_configs": []any{
			map[string]any{"job_name": "dlq-worker", "static_configs": []any{map[string]any{"targets": []string{workerAddr}}}},
			map[string]any{"job_name": "dlq-admin", "static_configs": []any{map[string]any{"targets": []string{adminAddr}}}},
		},
	})
	proctest.StartService(t, filepath.Join(dir, "prometheus.log"), nil, 30*time.Second, prometheus, "--config.file="+filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path="+filepath.Join(dir, "tsdb"), "--web.listen-address="+promAddr)
	waitHTTP(t, "http://"+promAddr+"/-/ready")

	// One record the worker redrives, one it parks (no original topic), then an operator
	// replays the parked one to the target: every family of series gets a value.
	produce(t, bootstrap, dlq, []kafka.Header{{Key: "dlq-original-topic", Value: []byte(target)}, {Key: "dlq-retry-count", Value: []byte("0")}})
	produce(t, bootstrap, dlq, nil)
	admin := func(method, path, body string) []byte {
		req, err := http.NewRequest(method, "http://"+adminAddr+path, strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		raw, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		require.Less(t, resp.StatusCode, 300, "%s %s: %s", method, path, raw)
		return raw
	}
	var page struct{ Records []struct{ ID int64 } }
	require.Eventually(t, func() bool {
		require.NoError(t, json.Unmarshal(admin("GET", "/v1/records?status=parked", ""), &page))
		return len(page.Records) == 1
	}, 2*time.Minute, 250*time.Millisecond, "the worker parks the record without an original topic")
	admin("POST", fmt.Sprintf("/v1/records/%d/replay", page.Records[0].ID), fmt.Sprintf(`{"target_topic":%q}`, target))

	prom := func(path string, q url.Values, out any) {
		resp, err := http.Get("http://" + promAddr + path + "?" + q.Encode())
		require.NoError(t, err)
		defer resp.Body.Close()
		raw, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, resp.StatusCode, "%s %v: %s", path, q, raw)
		require.NoError(t, json.Unmarshal(raw, out))
	}
	// alert reports whether Prometheus shows alert name in state, with labels among its own.
	alert := func(name, state string, labels map[string]string) func() bool {
		return func() bool {
			var alerts struct {
				Data struct {
					Alerts []struct {
						Labels map[string]string
						State  string
					}
				}
			}
			prom("/api/v1/alerts", nil, &alerts)
		alerts:
			for _, a := range alerts.Data.Alerts {
				if a.Labels["alertname"] != name || a.State != state {
					continue
				}
				for k, v := range labels {
					if a.Labels[k] != v {
						continue alerts
					}
				}
				return true
			}
			return false
		}
	}
	require.Eventually(t, alert("DLQRecordsParked", "firing", map[string]string{"route": "obs", "reason": "unroutable"}), 2*time.Minute, time.Second, "DLQRecordsParked fires for the parked record")

	// A job whose runner died 20 minutes ago and still holds its lease: the worker's
	// dlq_jobs_stalled_seconds reads it from PostgreSQL and DLQJobStuck becomes pending
	// (firing needs its 5 minutes more).
	conn, err := pgx.Connect(context.Background(), dbURL)
	require.NoError(t, err)
	_, err = conn.Exec(context.Background(), `INSERT INTO jobs (kind, record_ids, status, created_by, created_at, updated_at,
		started_at, lease_owner, lease_until) VALUES ('discard', '{0}', 'running', 'observability-test', now() - interval '20 minutes',
		now(), now() - interval '20 minutes', 'a-runner-that-died', now() + interval '1 hour')`)
	require.NoError(t, err)
	require.NoError(t, conn.Close(context.Background()))
	require.Eventually(t, alert("DLQJobStuck", "pending", map[string]string{"job": "dlq-worker"}), time.Minute, time.Second, "DLQJobStuck is pending for a job stalled for 20 minutes")

	// Every name the dashboard and the alerts read is scraped from the binaries (once the
	// replay job finished, its series too).
	var used []string
	for _, e := range dashboardQueries(t) {
		used = append(used, metricNames(e)...)
	}
	var alertRules struct {
		Groups []struct{ Rules []struct{ Expr string } }
	}
	raw, err := os.ReadFile(alertsFile)
	require.NoError(t, err)
	require.NoError(t, yaml.Unmarshal(raw, &alertRules))
	for _, r := range alertRules.Groups[0].Rules {
		used = append(used, metricNames(r.Expr)...)
	}
	slices.Sort(used)
	used = slices.Compact(used)
	worker, err := os.ReadFile(filepath.Join(dir, "dlq-worker"))
	require.NoError(t, err)
	var missing []string
	require.Eventually(t, func() bool {
		var names struct{ Data []string }
		prom("/api/v1/label/__name__/values", nil, &names)
		missing = missing[:0]
		for _, n := range used {
			later := slices.Contains(exportedOnlyAfterTheirEvent, n) && bytes.Contains(worker, []byte(n))
			if !slices.Contains(names.Data, n) && !later {
				missing = append(missing, n)
			}
		}
		return len(missing) == 0
	}, time.Minute, time.Second, "series named by the dashboard or the alerts that the binaries do not export: %v", &missing)

	// Prometheus itself answers every dashboard query (it would refuse one that does not parse).
	for _, e := range dashboardQueries(t) {
		var res struct{ Status string }
		prom("/api/v1/query", url.Values{"query": {e}}, &res)
		require.Equal(t, "success", res.Status, e)
	}
}

func writeYAML(t *testing.T, dir, name string, v any) {
	t.Helper()
	raw, err := yaml.Marshal(v)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, name), raw, 0o600))
}

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

func waitHTTP(t *testing.T, u string) {
	t.Helper()
	require.Eventually(t, func() bool {
		resp, err := http.Get(u)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, 2*time.Minute, 200*time.Millisecond, "%s never answered 200", u)
}

func produce(t *testing.T, bootstrap, topic string, headers []kafka.Header) {
	t.Helper()
	p, err := kafka.NewProducer(&kafka.ConfigMap{"bootstrap.servers": bootstrap, "acks": "all"})
	require.NoError(t, err)
	defer p.Close()
	delivered := make(chan kafka.Event, 1)
	require.NoError(t, p.Produce(&kafka.Message{
		TopicPartition: kafka.TopicPartition{Topic: &topic, Partition: kafka.PartitionAny},
		Value:          []byte(`{"order":1}`), Headers: headers,
	}, delivered))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	select {
	case e := <-delivered:
		require.NoError(t, e.(*kafka.Message).TopicPartition.Error)
	case <-ctx.Done():
		t.Fatal("produce: no delivery report in 30 s")
	}
}
