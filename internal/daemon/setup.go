package daemon

import (
	"context"
	"os"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/rs/zerolog"

	"github.com/dlqops/dlq/internal/config"
	"github.com/dlqops/dlq/internal/logging"
	"github.com/dlqops/dlq/internal/ops"
	"github.com/dlqops/dlq/internal/store"
)

// LoadConfig loads a binary's configuration. The conventional DATABASE_URL and
// KAFKA_BOOTSTRAP_SERVERS variables seed the connection settings, so the file, then the
// prefixed variables, override them.
func LoadConfig(path, envPrefix string, dst config.Validatable, db *store.Config, kafkaBootstrap *string) error {
	db.URL = os.Getenv("DATABASE_URL")
	if kafkaBootstrap != nil {
		*kafkaBootstrap = os.Getenv("KAFKA_BOOTSTRAP_SERVERS")
	}
	return config.Load(path, envPrefix, dst)
}

// Logger is the binary's root logger on stderr.
func Logger(l logging.Config, binary string) zerolog.Logger {
	return logging.New(os.Stderr, l.Level, l.Format).With().Str("service", binary).Logger()
}

// Base is what both binaries start from: the root logger, the ops server (not yet
// listening) and the PostgreSQL pool, migrated first when the configuration asks.
type Base struct {
	Log  zerolog.Logger
	Ops  *ops.Server
	Pool *pgxpool.Pool
}

// Start builds the Base of binary; the caller closes Pool.
func Start(ctx context.Context, binary string, l logging.Config, db store.Config) (Base, error) {
	b := Base{Log: Logger(l, binary)}
	b.Ops = ops.New(b.Log)
	if err := MigrateOnStart(ctx, db, b.Log); err != nil {
		return b, err
	}
	var err error
	b.Pool, err = OpenPool(ctx, db, b.Ops, b.Log)
	return b, err
}
