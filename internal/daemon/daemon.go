// Package daemon holds the start-up and shutdown sequence both binaries share: the ops
// server, readiness checks, the PostgreSQL pool, signals and a bounded graceful shutdown.
package daemon

import (
	"context"
	"errors"
	"fmt"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/rs/zerolog"

	"github.com/dlqops/dlq/internal/ops"
	"github.com/dlqops/dlq/internal/store"
)

// Component is a long-running part of a binary. Start returns once it runs; Stop ends it,
// waiting at most until ctx is done, and is safe to call when Start failed or never ran.
type Component interface {
	Start(ctx context.Context) error
	Stop(ctx context.Context) error
}

// Run starts the ops server as listen says, then each component in order, blocks until SIGINT
// or SIGTERM (or ctx ends), then stops the components in reverse order within grace.
func Run(ctx context.Context, log zerolog.Logger, srv *ops.Server, listen ops.Listen, grace time.Duration, components ...Component) error {
	ctx, stopSignals := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stopSignals()
	if err := srv.Start(listen); err != nil {
		return fmt.Errorf("http.listen %s: %w", listen.Addr, err)
	}
	started := make([]Component, 0, len(components))
	var startErr error
	for _, c := range components {
		if startErr = c.Start(ctx); startErr != nil {
			break
		}
		started = append(started, c)
	}
	if startErr == nil {
		log.Info().Msg("started")
		<-ctx.Done()
		log.Info().Dur("grace_ms", grace).Msg("shutting down")
	}
	// The shutdown outlives the cancelled signal context, bounded by its own grace.
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), grace)
	defer cancel()
	errs := []error{startErr}
	for i := len(started) - 1; i >= 0; i-- {
		errs = append(errs, started[i].Stop(sctx))
	}
	errs = append(errs, srv.Stop(sctx))
	if err := errors.Join(errs...); err != nil {
		return err
	}
	log.Info().Msg("stopped")
	return nil
}

// OpenPool connects to PostgreSQL and registers its readiness check. The pool connects
// lazily, so a database that is down at start-up makes the binary not ready, not dead;
// sessions that turn read-only (a failover) are recycled (store.NewPool), logged on log.
func OpenPool(ctx context.Context, db store.Config, srv *ops.Server, log zerolog.Logger) (*pgxpool.Pool, error) {
	pc, err := pgxpool.ParseConfig(db.URL)
	if err != nil {
		return nil, fmt.Errorf("database.url: %w", err)
	}
	pc.MaxConns = db.MaxConns
	if db.StatementTimeout > 0 {
		pc.ConnConfig.RuntimeParams["statement_timeout"] = strconv.FormatInt(db.StatementTimeout.Milliseconds(), 10)
	}
	pool, err := store.NewPool(ctx, pc, log.With().Str("component", "postgres").Logger())
	if err != nil {
		return nil, fmt.Errorf("database: %w", err)
	}
	srv.AddCheck("postgres", pool.Ping)
	return pool, nil
}
