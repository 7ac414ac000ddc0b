// Package workerconfig is dlq-worker's configuration: the settings of each component the
// worker runs, assembled under their YAML keys and loaded by internal/config.
package workerconfig

import (
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/dlqops/dlq/internal/config"
	"github.com/dlqops/dlq/internal/housekeeping"
	"github.com/dlqops/dlq/internal/jobs"
	"github.com/dlqops/dlq/internal/kafkaclient"
	"github.com/dlqops/dlq/internal/logging"
	"github.com/dlqops/dlq/internal/ops"
	"github.com/dlqops/dlq/internal/redrive"
	"github.com/dlqops/dlq/internal/routes"
	"github.com/dlqops/dlq/internal/store"
)

// Config is dlq-worker's configuration (environment prefix DLQ_WORKER_).
type Config struct {
	Log      logging.Config     `yaml:"log"`
	HTTP     ops.HTTP           `yaml:"http"`
	Database store.Config       `yaml:"database"`
	Kafka    kafkaclient.Config `yaml:"kafka"`
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
	Jobs   jobs.Settings   `yaml:"jobs"`
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
	Retention housekeeping.Retention `yaml:"retention"`
	// ReadPath is how the routes read and redrive records through librdkafka: queue (one
	// call into librdkafka per record, reaching into confluent-kafka-go's internals of
	// the one release checked) or poll (confluent-kafka-go's public API only).
	ReadPath string `yaml:"read_path"`
}

// WithDefaults implements config.Validatable.
func (w *Config) WithDefaults() {
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
		w.ReadPath = redrive.ReadPathQueue
	}
}

// ReadFiles implements config.FileReader: kafka.extra_files.
func (w *Config) ReadFiles() error { return w.Kafka.ReadFiles() }

// Validate implements config.Validatable.
func (w *Config) Validate() error {
	var mem error
	if w.MemoryLimitMiB < 32 {
		mem = fmt.Errorf("memory_limit_mib: must be at least 32, got %d", w.MemoryLimitMiB)
	}
	var slots error
	if w.Jobs.Concurrency < 1 || w.Jobs.Concurrency > 64 {
		slots = fmt.Errorf("jobs.concurrency: must be 1 to 64, got %d", w.Jobs.Concurrency)
	}
	var gid error
	if w.GroupInstanceID != "" && !instanceIDPattern.MatchString(w.GroupInstanceID) {
		gid = fmt.Errorf("group_instance_id: %q must be 1-100 letters, digits, '.', '_' or '-' (or off)", w.GroupInstanceID)
	}
	var path error
	if w.ReadPath != redrive.ReadPathQueue && w.ReadPath != redrive.ReadPathPoll {
		path = fmt.Errorf("read_path: must be %s or %s, got %q", redrive.ReadPathQueue, redrive.ReadPathPoll, w.ReadPath)
	}
	return errors.Join(w.Log.Validate(), w.HTTP.Validate(), w.Database.Validate(), w.Kafka.Validate(),
		config.ValidateGrace(w.ShutdownGrace), mem, slots, gid, path, routes.ValidateAll(w.Routes), w.Retention.Validate())
}

var instanceIDPattern = regexp.MustCompile(`^[A-Za-z0-9._-]{1,100}$`)
