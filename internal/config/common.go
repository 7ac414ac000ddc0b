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
	Listen string `yaml:"listen"`
	// Timeouts of each connection (see ops.Listen) and the cap on connections at once.
	ReadHeaderTimeout time.Duration `yaml:"read_header_timeout"`
	ReadTimeout       time.Duration `yaml:"read_timeout"`
	WriteTimeout      time.Duration `yaml:"write_timeout"`
	IdleTimeout       time.Duration `yaml:"idle_timeout"`
	MaxConns          int           `yaml:"max_conns"`
	// MaxConnsPerAddr caps one client address's connections (behind a proxy, all of them
	// come from the proxy's address: raise it to max_conns).
	MaxConnsPerAddr int `yaml:"max_conns_per_addr"`
	// TLSCertFile and TLSKeyFile (PEM) make the listener serve TLS; both or neither.
	TLSCertFile string `yaml:"tls_cert_file"`
	TLSKeyFile  string `yaml:"tls_key_file"`
	// AllowInsecure lets dlq-admin listen on a non-loopback address without TLS: for a
	// TLS-terminating proxy in front of it.
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
	Level string `yaml:"level"`
	// Format is json, console, or auto (console when stderr is a terminal).
	Format string `yaml:"format"`
}

// Database is the PostgreSQL connection.
type Database struct {
	URL string `yaml:"url"`
	// MigrateOnStart applies pending migrations before serving.
	MigrateOnStart bool  `yaml:"migrate_on_start"`
	MaxConns       int32 `yaml:"max_conns"`
	// StatementTimeout makes PostgreSQL cancel a statement of the pool that runs longer;
	// zero is none.
	StatementTimeout time.Duration `yaml:"statement_timeout"`
}

// Kafka is the client configuration shared by every Kafka handle the worker opens.
type Kafka struct {
	BootstrapServers string `yaml:"bootstrap_servers"`
	// Extra holds further librdkafka properties (security.protocol, sasl.*, ...).
	Extra map[string]string `yaml:"extra"`
	// ExtraFiles holds librdkafka properties whose value is the content of a file
	// (sasl.password from a mounted Secret), read at start-up into Extra, so that a
	// secret never has to be written into the configuration file.
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
