package config

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"time"

	"github.com/dlqops/dlq/internal/api"
	"github.com/dlqops/dlq/internal/auth"
	"github.com/dlqops/dlq/internal/headers"
	"github.com/dlqops/dlq/internal/routes"
)

// Worker is dlq-worker's configuration (environment prefix DLQ_WORKER_).
type Worker struct {
	Log      Log      `yaml:"log"`
	HTTP     HTTP     `yaml:"http"`
	Database Database `yaml:"database"`
	Kafka    Kafka    `yaml:"kafka"`
	// ShutdownGrace is how long SIGTERM or SIGINT waits for in-flight work: routes commit
	// and leave their groups, running jobs are handed back.
	ShutdownGrace time.Duration `yaml:"shutdown_grace"`
	// MemoryLimitMiB is the Go heap's budget, at least 32: the worker collects garbage
	// when its heap nears it (GOGC off, this as the soft memory limit), not each time the
	// heap doubles, so its peak does not grow with the backlog. Peak RSS is about this
	// plus librdkafka's buffers. GOGC and GOMEMLIMIT in the environment win.
	MemoryLimitMiB int64 `yaml:"memory_limit_mib"`
	// Routes are the redrive routes: each a set of DLQ topics redriven on one schedule
	// with one retry policy.
	Routes []routes.Config `yaml:"routes"`
	Jobs   Jobs            `yaml:"jobs"`
	// GroupInstanceID is the static group membership id of this worker (each route's
	// consumer adds ".<route>"), so that a worker restarted after a crash gets its
	// partitions back at once: empty picks the host name and the lowest slot no other
	// worker on this host holds (a lock file in the temporary directory), "off" disables
	// static membership. Give an explicit id (e.g. a StatefulSet pod name: the Helm chart
	// sets it from the pod's name) where workers share a host name but not a temporary
	// directory, or where the root is read-only (without a writable temporary directory
	// the default refuses to start, saying to set DLQ_WORKER_GROUP_INSTANCE_ID). A static
	// member does not leave the group on shutdown: its partitions wait for it (or for the
	// session timeout).
	GroupInstanceID string `yaml:"group_instance_id"`
	// Retention is how long rows nobody needs any more are kept.
	Retention Retention `yaml:"retention"`
	// ReadPath is how the routes read and redrive records through librdkafka: queue (one
	// call into librdkafka per record, reaching into confluent-kafka-go's internals of
	// the one release checked) or poll (confluent-kafka-go's public API only).
	ReadPath string `yaml:"read_path"`
}

// The worker's read paths (Worker.ReadPath).
const (
	ReadPathQueue = "queue"
	ReadPathPoll  = "poll"
)

// Jobs configures the job runner.
type Jobs struct {
	// Concurrency is how many operator jobs (replays, discards) run at once, 1 to 64, each
	// at its own rate; one more slot takes only jobs that name their records, so a
	// single-record replay never waits behind bulk jobs.
	Concurrency int `yaml:"concurrency"`
}

// WithDefaults implements Validatable.
func (w *Worker) WithDefaults() {
	for i := range w.Routes {
		w.Routes[i].WithDefaults()
	}
	w.Log.WithDefaults()
	w.Database.WithDefaults()
	w.Retention.WithDefaults()
	if w.HTTP.Listen == "" {
		w.HTTP.Listen = "127.0.0.1:9464"
	}
	w.HTTP.WithDefaults()
	if w.ShutdownGrace == 0 {
		w.ShutdownGrace = 30 * time.Second
	}
	if w.MemoryLimitMiB == 0 {
		w.MemoryLimitMiB = 64
	}
	if w.Jobs.Concurrency == 0 {
		w.Jobs.Concurrency = 4
	}
	if w.ReadPath == "" {
		w.ReadPath = ReadPathQueue
	}
}

// ReadFiles implements FileReader: kafka.extra_files.
func (w *Worker) ReadFiles() error { return w.Kafka.ReadFiles() }

// Validate implements Validatable.
func (w *Worker) Validate() error {
	var mem error
	if w.MemoryLimitMiB < 32 {
		mem = fmt.Errorf("memory_limit_mib: must be at least 32, got %d", w.MemoryLimitMiB)
	}
	var jobs error
	if w.Jobs.Concurrency < 1 || w.Jobs.Concurrency > 64 {
		jobs = fmt.Errorf("jobs.concurrency: must be 1 to 64, got %d", w.Jobs.Concurrency)
	}
	var gid error
	if w.GroupInstanceID != "" && !instanceIDPattern.MatchString(w.GroupInstanceID) {
		gid = fmt.Errorf("group_instance_id: %q must be 1-100 letters, digits, '.', '_' or '-' (or off)", w.GroupInstanceID)
	}
	var path error
	if w.ReadPath != ReadPathQueue && w.ReadPath != ReadPathPoll {
		path = fmt.Errorf("read_path: must be %s or %s, got %q", ReadPathQueue, ReadPathPoll, w.ReadPath)
	}
	return errors.Join(w.Log.Validate(), w.HTTP.Validate(), w.Database.Validate(), w.Kafka.Validate(),
		ValidateGrace(w.ShutdownGrace), mem, jobs, gid, path, routes.ValidateAll(w.Routes), w.Retention.Validate())
}

var instanceIDPattern = regexp.MustCompile(`^[A-Za-z0-9._-]{1,100}$`)

// Admin is dlq-admin's configuration (environment prefix DLQ_ADMIN_).
type Admin struct {
	Log      Log      `yaml:"log"`
	HTTP     HTTP     `yaml:"http"`
	Database Database `yaml:"database"`
	// ShutdownGrace is how long SIGTERM or SIGINT waits for requests in progress.
	ShutdownGrace time.Duration `yaml:"shutdown_grace"`
	// Tokens are the API's bearer tokens, stored as SHA-256 hashes with a role.
	Tokens []auth.Token `yaml:"tokens"`
	// ReplayTopics are the topics a replay may target besides a record's original topic.
	ReplayTopics []string `yaml:"replay_topics"`
	// MaxBodyBytes caps request bodies (413 above it).
	MaxBodyBytes int64 `yaml:"max_body_bytes"`
	// Limits bound what callers may consume.
	Limits api.Limits `yaml:"limits"`
	// PublicURL is the console's address as operators reach it (scheme, host and port);
	// https there makes the console's cookies Secure and __Host- prefixed and adds HSTS
	// behind a TLS-terminating proxy. Optional.
	PublicURL string `yaml:"public_url"`
	// AllowDevTokens accepts the well-known development tokens of the example
	// configuration; `make dev` sets it, nothing else should.
	AllowDevTokens bool `yaml:"allow_dev_tokens"`
}

// WithDefaults implements Validatable.
func (a *Admin) WithDefaults() {
	a.Log.WithDefaults()
	a.Database.WithDefaults()
	if a.Database.StatementTimeout == 0 {
		a.Database.StatementTimeout = 10 * time.Second // an API call waits no longer
	}
	if a.HTTP.Listen == "" {
		a.HTTP.Listen = "127.0.0.1:8080"
	}
	a.HTTP.WithDefaults()
	if a.ShutdownGrace == 0 {
		a.ShutdownGrace = 15 * time.Second
	}
	if a.MaxBodyBytes == 0 {
		a.MaxBodyBytes = 1 << 20
	}
	if a.Limits.MaxConcurrentTotal == 0 {
		// Two connections stay for refusals' audit rows and the readiness check.
		a.Limits.MaxConcurrentTotal = max(1, int(a.Database.MaxConns)-2)
	}
	a.Limits.WithDefaults()
}

// Validate implements Validatable.
func (a *Admin) Validate() error {
	errs := []error{a.Log.Validate(), a.HTTP.Validate(), a.Database.Validate(), ValidateGrace(a.ShutdownGrace), a.Limits.Validate()}
	if !a.HTTP.Loopback() && a.HTTP.TLSCertFile == "" && !a.HTTP.AllowInsecure {
		// Bearer tokens would cross the network in clear.
		errs = append(errs, fmt.Errorf("http.listen: %q is not a loopback address: set http.tls_cert_file and "+
			"http.tls_key_file, or http.allow_insecure: true behind a TLS-terminating proxy", a.HTTP.Listen))
	}
	if len(a.Tokens) == 0 {
		errs = append(errs, errors.New("tokens: at least one is required (generate one with `dlq-admin token new`)"))
	} else if _, err := auth.New(a.Tokens, auth.AllowDevTokens(a.AllowDevTokens)); err != nil {
		errs = append(errs, err)
	}
	for i, t := range a.ReplayTopics {
		if !headers.ValidTopicName(t) {
			errs = append(errs, fmt.Errorf("replay_topics[%d]: %q is not a valid topic name", i, t))
		}
	}
	if a.Limits.MaxConcurrentTotal >= int(a.Database.MaxConns) && a.Database.MaxConns > 1 {
		errs = append(errs, fmt.Errorf("limits.max_concurrent_total: must be below database.max_conns (%d), got %d",
			a.Database.MaxConns, a.Limits.MaxConcurrentTotal))
	}
	if a.PublicURL != "" {
		if u, err := url.Parse(a.PublicURL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			errs = append(errs, fmt.Errorf("public_url: %q is not an http:// or https:// URL", a.PublicURL))
		}
	}
	if a.MaxBodyBytes < 1024 {
		errs = append(errs, fmt.Errorf("max_body_bytes: must be at least 1024, got %d", a.MaxBodyBytes))
	}
	return errors.Join(errs...)
}
