package daemon

import (
	"os"

	"github.com/rs/zerolog"

	"github.com/dlqops/dlq/internal/config"
	"github.com/dlqops/dlq/internal/logging"
)

// LoadConfig loads a binary's configuration. The conventional DATABASE_URL and
// KAFKA_BOOTSTRAP_SERVERS variables seed the connection settings, so the file, then the
// prefixed variables, override them.
func LoadConfig(path, envPrefix string, dst config.Validatable, db *config.Database, kafka *config.Kafka) error {
	db.URL = os.Getenv("DATABASE_URL")
	if kafka != nil {
		kafka.BootstrapServers = os.Getenv("KAFKA_BOOTSTRAP_SERVERS")
	}
	return config.Load(path, envPrefix, dst)
}

// Logger is the binary's root logger on stderr.
func Logger(l config.Log, binary string) zerolog.Logger {
	return logging.New(os.Stderr, l.Level, l.Format).With().Str("service", binary).Logger()
}
