package proctest

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// WorkerConfig is what the process tests vary in a dlq-worker configuration: one route
// on one DLQ topic, run every second without backoff, and the group membership.
type WorkerConfig struct {
	DatabaseURL, Bootstrap string
	// Session is the group session timeout: how soon the group notices a killed member.
	// 6 s, the broker's minimum, when 0.
	Session       time.Duration
	GroupInstance string // group_instance_id: "" leaves the default, static membership
	Route, Topic  string
	MaxInFlight   int    // 1 when 0
	RateLimit     int    // records per second; 0 is unlimited
	Schedule      string // "@every 1s" when ""
	MaxRetries    int    // the route's default when 0
	Delivery      string // the route's delivery; its default when ""
}

// Write writes c as worker.yaml in dir and returns its path.
func (c WorkerConfig) Write(t testing.TB, dir string) string {
	t.Helper()
	if c.Session == 0 {
		c.Session = 6 * time.Second
	}
	gi := ""
	if c.GroupInstance != "" {
		gi = fmt.Sprintf("group_instance_id: %q\n", c.GroupInstance)
	}
	if c.Schedule == "" {
		c.Schedule = "@every 1s"
	}
	retries := ""
	if c.MaxRetries != 0 {
		retries = fmt.Sprintf("    max_retries: %d\n", c.MaxRetries)
	}
	if c.Delivery != "" {
		retries += fmt.Sprintf("    delivery: %s\n", c.Delivery)
	}
	path := filepath.Join(dir, "worker.yaml")
	err := os.WriteFile(path, []byte(fmt.Sprintf(`log: {level: info, format: json}
http: {listen: "127.0.0.1:0"}
database: {url: %q}
kafka:
  bootstrap_servers: %q
  consumer: {session.timeout.ms: "%d", heartbeat.interval.ms: "1000"}
shutdown_grace: 30s
%sroutes:
  - name: %s
    topics: [%s]
    schedule: %q
    backoff: none
    max_in_flight: %d
    rate_limit: %d
%s`, c.DatabaseURL, c.Bootstrap, c.Session.Milliseconds(), gi, c.Route, c.Topic, c.Schedule, max(c.MaxInFlight, 1), c.RateLimit, retries)), 0o600)
	if err != nil {
		t.Fatalf("write worker configuration: %v", err)
	}
	return path
}
