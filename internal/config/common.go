package config

import (
	"fmt"
	"net"
	"time"

	"github.com/rs/zerolog"
)

// HTTP is the operations listener: /healthz, /readyz and /metrics (and the API on dlq-admin).
type HTTP struct {
	Listen string `yaml:"listen"`
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
}

// Kafka is the client configuration shared by every Kafka handle the worker opens.
type Kafka struct {
	BootstrapServers string `yaml:"bootstrap_servers"`
	// Extra holds further librdkafka properties (security.protocol, sasl.*, ...).
	Extra map[string]string `yaml:"extra"`
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
	if _, err := zerolog.ParseLevel(l.Level); err != nil || l.Level == "" {
		return fmt.Errorf("log.level: %q is not one of trace, debug, info, warn, error", l.Level)
	}
	switch l.Format {
	case "json", "console", "auto":
		return nil
	}
	return fmt.Errorf("log.format: %q is not one of json, console, auto", l.Format)
}

// Validate checks that the listen address is host:port.
func (h HTTP) Validate() error {
	if _, _, err := net.SplitHostPort(h.Listen); err != nil {
		return fmt.Errorf("http.listen: %q is not host:port: %v", h.Listen, err)
	}
	return nil
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
