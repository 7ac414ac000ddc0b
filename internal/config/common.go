package config

import (
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/dlqops/dlq/internal/ops"
)

// HTTP is the operations listener: /healthz, /readyz and /metrics (and the API on dlq-admin).
type HTTP struct {
	// Listen is the host:port of /healthz, /readyz (ready only when PostgreSQL, Kafka for
	// the worker, and every route's topics answer), /metrics, and dlq-admin's API and
	// console.
	Listen string `yaml:"listen"`
	// ReadHeaderTimeout is how long a connection may take to send its request headers
	// (capped at 64 KiB).
	ReadHeaderTimeout time.Duration `yaml:"read_header_timeout"`
	// ReadTimeout is how long a connection may take to send its whole request.
	ReadTimeout time.Duration `yaml:"read_timeout"`
	// WriteTimeout is how long a connection may take to receive its answer.
	WriteTimeout time.Duration `yaml:"write_timeout"`
	// IdleTimeout is how long a keep-alive connection may idle between requests.
	IdleTimeout time.Duration `yaml:"idle_timeout"`
	// MaxConns is how many connections are served at once; further ones wait in the
	// kernel's accept queue.
	MaxConns int `yaml:"max_conns"`
	// MaxConnsPerAddr caps one client address's connections (behind a proxy, all of them
	// come from the proxy's address: raise it to max_conns).
	MaxConnsPerAddr int `yaml:"max_conns_per_addr"`
	// TLSCertFile and TLSKeyFile (PEM: certificate chain and key) make the listener serve
	// TLS 1.2+; both or neither. The files are read again when either changes, so a renewal
	// needs no restart (a broken one keeps the previous certificate, logged at WARN).
	TLSCertFile string `yaml:"tls_cert_file"`
	TLSKeyFile  string `yaml:"tls_key_file"`
	// AllowInsecure lets dlq-admin listen on a non-loopback address without TLS, for a
	// TLS-terminating proxy in front of it (dlq-admin only).
	AllowInsecure bool `yaml:"allow_insecure"`
}

// WithDefaults fills the timeouts and the connection cap.
func (h *HTTP) WithDefaults() {
	l := h.Listener().WithDefaults()
	h.ReadHeaderTimeout, h.ReadTimeout, h.WriteTimeout, h.IdleTimeout, h.MaxConns, h.MaxConnsPerAddr =
		l.ReadHeaderTimeout, l.ReadTimeout, l.WriteTimeout, l.IdleTimeout, l.MaxConns, l.MaxConnsPerAddr
}

// Listener is the ops server's view of h.
func (h HTTP) Listener() ops.Listen {
	return ops.Listen{Addr: h.Listen, ReadHeaderTimeout: h.ReadHeaderTimeout, ReadTimeout: h.ReadTimeout,
		WriteTimeout: h.WriteTimeout, IdleTimeout: h.IdleTimeout, MaxConns: h.MaxConns, MaxConnsPerAddr: h.MaxConnsPerAddr,
		CertFile: h.TLSCertFile, KeyFile: h.TLSKeyFile}
}

// Loopback reports whether the listen address accepts only local connections.
func (h HTTP) Loopback() bool {
	host, _, err := net.SplitHostPort(h.Listen)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Log selects the log level and format.
type Log struct {
	// Level is one of `trace`, `debug`, `info`, `warn`, `error`.
	Level string `yaml:"level"`
	// Format is `json`, `console`, or `auto` (console when stderr is a terminal).
	Format string `yaml:"format"`
}

// Database is the PostgreSQL connection.
type Database struct {
	// URL is the PostgreSQL connection string; it starts from DATABASE_URL, which the file
	// and the prefixed variable override.
	URL string `yaml:"url"`
	// MigrateOnStart applies pending migrations before serving (safe with several
	// instances: they take an advisory lock).
	MigrateOnStart bool `yaml:"migrate_on_start"`
	// MaxConns is the pool size. Each worker route stores with up to 3 connections at
	// once, each running job takes up to 6, housekeeping 2 during a pass.
	MaxConns int32 `yaml:"max_conns"`
	// StatementTimeout makes PostgreSQL cancel a statement of the pool that runs longer
	// (dlq-admin then answers 503 with Retry-After); zero is none.
	StatementTimeout time.Duration `yaml:"statement_timeout"`
}

// Kafka is the client configuration shared by every Kafka handle the worker opens.
type Kafka struct {
	// BootstrapServers are the brokers; it starts from KAFKA_BOOTSTRAP_SERVERS, which the
	// file and the prefixed variable override.
	BootstrapServers string `yaml:"bootstrap_servers"`
	// Extra holds further librdkafka properties of every client (security.protocol,
	// sasl.*, client.id, ...).
	Extra map[string]string `yaml:"extra"`
	// Consumer and Producer hold librdkafka properties of the consumers only
	// (session.timeout.ms, fetch.*) and of the producers only (linger.ms,
	// compression.type): librdkafka warns (CONFWARN) about a consumer property given to a
	// producer, or the other way round. They override Extra.
	Consumer map[string]string `yaml:"consumer"`
	Producer map[string]string `yaml:"producer"`
	// ExtraFiles holds librdkafka properties whose value is the content of a file
	// (sasl.password from a mounted Secret), read at start-up into Extra without one
	// trailing newline, so that a secret is in neither the file nor the environment. A
	// property may not also be in Extra; a missing file stops start-up.
	ExtraFiles map[string]string `yaml:"extra_files"`
}

// WithDefaults fills the log defaults.
func (l *Log) WithDefaults() {
	if l.Level == "" {
		l.Level = "info"
	}
	if l.Format == "" {
		l.Format = "auto"
	}
}

// Validate checks level and format.
func (l Log) Validate() error {
	// Only the five documented levels: zerolog would also take "disabled" or "fatal",
	// which silence the warnings an operator relies on.
	switch l.Level {
	case "trace", "debug", "info", "warn", "error":
	default:
		return fmt.Errorf("log.level: %q is not one of trace, debug, info, warn, error", l.Level)
	}
	switch l.Format {
	case "json", "console", "auto":
		return nil
	}
	return fmt.Errorf("log.format: %q is not one of json, console, auto", l.Format)
}

// Validate checks that the listen address is host:port, the bounds positive, and TLS
// given as a certificate and its key.
func (h HTTP) Validate() error {
	var errs []error
	if _, _, err := net.SplitHostPort(h.Listen); err != nil {
		errs = append(errs, fmt.Errorf("http.listen: %q is not host:port: %v", h.Listen, err))
	}
	for key, d := range map[string]time.Duration{"read_header_timeout": h.ReadHeaderTimeout,
		"read_timeout": h.ReadTimeout, "write_timeout": h.WriteTimeout, "idle_timeout": h.IdleTimeout} {
		if d <= 0 {
			errs = append(errs, fmt.Errorf("http.%s: must be positive, got %s", key, d))
		}
	}
	if h.MaxConns < 1 {
		errs = append(errs, fmt.Errorf("http.max_conns: must be at least 1, got %d", h.MaxConns))
	}
	if h.MaxConnsPerAddr < 1 {
		errs = append(errs, fmt.Errorf("http.max_conns_per_addr: must be at least 1, got %d", h.MaxConnsPerAddr))
	}
	if (h.TLSCertFile == "") != (h.TLSKeyFile == "") {
		errs = append(errs, errors.New("http.tls_cert_file, http.tls_key_file: give both or neither"))
	}
	return errors.Join(errs...)
}

// WithDefaults fills the pool size.
func (d *Database) WithDefaults() {
	if d.MaxConns == 0 {
		d.MaxConns = 10
	}
}

// Validate requires a URL.
func (d Database) Validate() error {
	if d.URL == "" {
		return fmt.Errorf("database.url: required (or set DATABASE_URL)")
	}
	if d.MaxConns < 1 {
		return fmt.Errorf("database.max_conns: must be at least 1, got %d", d.MaxConns)
	}
	if d.StatementTimeout < 0 || d.StatementTimeout > 0 && d.StatementTimeout < time.Millisecond {
		return fmt.Errorf("database.statement_timeout: must be zero (none) or at least 1ms, got %s", d.StatementTimeout)
	}
	return nil
}

// Validate requires bootstrap servers.
func (k Kafka) Validate() error {
	if k.BootstrapServers == "" {
		return fmt.Errorf("kafka.bootstrap_servers: required (or set KAFKA_BOOTSTRAP_SERVERS)")
	}
	return nil
}

// ValidateGrace checks a shutdown grace period.
func ValidateGrace(d time.Duration) error {
	if d <= 0 {
		return fmt.Errorf("shutdown_grace: must be positive, got %s", d)
	}
	return nil
}
