package store

import (
	"context"
	"database/sql"
	"fmt"
	"hash/fnv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"

	"github.com/dlqops/dlq/migrations"
)

// MigrationState is one migration and whether the database has it.
type MigrationState struct {
	Version   int64
	Name      string
	Applied   bool
	AppliedAt time.Time
}

// Migrate applies every pending migration to the schema connString's search_path names
// (public by default). Instances that start at once serialize on an advisory lock; the
// first applies, the others find nothing pending.
func Migrate(ctx context.Context, connString string) error {
	return withProvider(ctx, connString, func(p *goose.Provider) error {
		_, err := p.Up(ctx)
		return err
	})
}

// MigrationStatus lists every known migration in version order.
func MigrationStatus(ctx context.Context, connString string) ([]MigrationState, error) {
	var out []MigrationState
	err := withProvider(ctx, connString, func(p *goose.Provider) error {
		status, err := p.Status(ctx)
		for _, m := range status {
			out = append(out, MigrationState{
				Version:   m.Source.Version,
				Name:      m.Source.Path,
				Applied:   m.State == goose.StateApplied,
				AppliedAt: m.AppliedAt,
			})
		}
		return err
	})
	return out, err
}

func withProvider(ctx context.Context, connString string, fn func(*goose.Provider) error) error {
	cfg, err := pgx.ParseConfig(connString)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	// goose speaks database/sql.
	db := stdlib.OpenDB(*cfg)
	defer db.Close()
	lockID, err := migrationLockID(ctx, db)
	if err != nil {
		return interpretError(fmt.Errorf("migrate: %w", err))
	}
	// One-second probes: the default five seconds makes every waiting instance start slowly.
	locker, err := lock.NewPostgresSessionLocker(lock.WithLockID(lockID), lock.WithLockTimeout(1, 300))
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	// Migration numbers are assigned ahead of time, so a lower one may land after a higher
	// one was applied: it is applied then, not refused.
	p, err := goose.NewProvider(goose.DialectPostgres, db, migrations.FS,
		goose.WithSessionLocker(locker), goose.WithDisableGlobalRegistry(true), goose.WithAllowOutofOrder(true))
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	if err := fn(p); err != nil {
		return interpretError(fmt.Errorf("migrate: %w", err))
	}
	return nil
}

// migrationLockID derives the advisory lock from the database and schema being migrated, so
// that migrating one schema does not wait for another in the same database.
func migrationLockID(ctx context.Context, db *sql.DB) (int64, error) {
	var target string
	if err := db.QueryRowContext(ctx, "SELECT current_database() || '.' || current_schema()").Scan(&target); err != nil {
		return 0, err
	}
	h := fnv.New64a()
	h.Write([]byte("dlq-migrate." + target))
	return int64(h.Sum64()), nil
}
