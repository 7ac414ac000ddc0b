package store

import (
	"fmt"
	"time"
)

// Config is the PostgreSQL connection (`database:`).
type Config struct {
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

// WithDefaults fills the pool size.
func (d *Config) WithDefaults() {
	if d.MaxConns == 0 {
		d.MaxConns = 10
	}
}

// Validate requires a URL.
func (d Config) Validate() error {
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
