// Package adminconfig is dlq-admin's configuration: the settings of each component the
// admin server runs, assembled under their YAML keys and loaded by internal/config.
package adminconfig

import (
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/dlqops/dlq/internal/api"
	"github.com/dlqops/dlq/internal/auth"
	"github.com/dlqops/dlq/internal/config"
	"github.com/dlqops/dlq/internal/headers"
	"github.com/dlqops/dlq/internal/logging"
	"github.com/dlqops/dlq/internal/masking"
	"github.com/dlqops/dlq/internal/ops"
	"github.com/dlqops/dlq/internal/schemas"
	"github.com/dlqops/dlq/internal/store"
)

// Config is dlq-admin's configuration (environment prefix DLQ_ADMIN_).
type Config struct {
	Log      logging.Config `yaml:"log"`
	HTTP     ops.HTTP       `yaml:"http"`
	Database store.Config   `yaml:"database"`
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
	// Masking hides configured payload fields from callers without the unmask
	// permission.
	Masking masking.Config `yaml:"masking"`
	// SchemaRegistry is the Confluent-compatible Schema Registry that decodes keys and
	// values in its wire format and encodes value_json edits. Optional.
	SchemaRegistry schemas.Config `yaml:"schema_registry"`
	// AllowDevTokens accepts the well-known development tokens of the example
	// configuration; `make dev` sets it, nothing else should.
	AllowDevTokens bool `yaml:"allow_dev_tokens"`
}

// WithDefaults implements config.Validatable.
func (a *Config) WithDefaults() {
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

// Validate implements config.Validatable.
func (a *Config) Validate() error {
	errs := []error{a.Log.Validate(), a.HTTP.Validate(), a.Database.Validate(), config.ValidateGrace(a.ShutdownGrace), a.Limits.Validate(), a.SchemaRegistry.Validate()}
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
	if _, err := masking.New(a.Masking); err != nil {
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
