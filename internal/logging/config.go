package logging

import "fmt"

// Config selects the log level and format (`log:`).
type Config struct {
	// Level is one of `trace`, `debug`, `info`, `warn`, `error`.
	Level string `yaml:"level"`
	// Format is `json`, `console`, or `auto` (console when stderr is a terminal).
	Format string `yaml:"format"`
}

// WithDefaults fills the log defaults.
func (l *Config) WithDefaults() {
	if l.Level == "" {
		l.Level = "info"
	}
	if l.Format == "" {
		l.Format = "auto"
	}
}

// Validate checks level and format.
func (l Config) Validate() error {
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
