package config

import (
	"errors"
	"time"
)

// Worker is dlq-worker's configuration (environment prefix DLQ_WORKER_).
type Worker struct {
	Log           Log           `yaml:"log"`
	HTTP          HTTP          `yaml:"http"`
	Database      Database      `yaml:"database"`
	Kafka         Kafka         `yaml:"kafka"`
	ShutdownGrace time.Duration `yaml:"shutdown_grace"`
}

// WithDefaults implements Validatable.
func (w *Worker) WithDefaults() {
	w.Log.WithDefaults()
	w.Database.WithDefaults()
	if w.HTTP.Listen == "" {
		w.HTTP.Listen = "127.0.0.1:9464"
	}
	if w.ShutdownGrace == 0 {
		w.ShutdownGrace = 30 * time.Second
	}
}

// Validate implements Validatable.
func (w *Worker) Validate() error {
	return errors.Join(w.Log.Validate(), w.HTTP.Validate(), w.Database.Validate(), w.Kafka.Validate(),
		ValidateGrace(w.ShutdownGrace))
}

// Admin is dlq-admin's configuration (environment prefix DLQ_ADMIN_).
type Admin struct {
	Log           Log           `yaml:"log"`
	HTTP          HTTP          `yaml:"http"`
	Database      Database      `yaml:"database"`
	ShutdownGrace time.Duration `yaml:"shutdown_grace"`
}

// WithDefaults implements Validatable.
func (a *Admin) WithDefaults() {
	a.Log.WithDefaults()
	a.Database.WithDefaults()
	if a.HTTP.Listen == "" {
		a.HTTP.Listen = "127.0.0.1:8080"
	}
	if a.ShutdownGrace == 0 {
		a.ShutdownGrace = 15 * time.Second
	}
}

// Validate implements Validatable.
func (a *Admin) Validate() error {
	return errors.Join(a.Log.Validate(), a.HTTP.Validate(), a.Database.Validate(), ValidateGrace(a.ShutdownGrace))
}
