package store

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/rs/zerolog"
)

// badSessionStates are the SQLSTATEs after which a pooled session is no good although its
// connection is up: the server it reached refuses writes (a standby after a failover, a
// read-only default set while it was opened). A new session may reach a writable server.
var badSessionStates = map[string]bool{
	"25006": true, // read_only_sql_transaction
	"57P01": true, // admin_shutdown: the server is going away
	"57P02": true, // crash_shutdown
	"57P03": true, // cannot_connect_now: still starting or recovering
}

// recycleEvery bounds how often the pool is reset while every call still fails.
const recycleEvery = time.Second

// sessionGuard watches every statement of the pool's connections (a pgx tracer) and
// recycles the pool's sessions after an error of badSessionStates: pgxpool's Reset closes
// idle connections at once and busy ones when they are released, so the next calls open
// fresh sessions by themselves.
type sessionGuard struct {
	pool atomic.Pointer[pgxpool.Pool] // set once the pool exists
	log  atomic.Pointer[zerolog.Logger]
	last atomic.Int64 // unix nanoseconds of the last reset
}

// NewPool opens a pool on cfg whose sessions are recycled after an error that means a
// session is no good although its connection is up, each recycle logged at WARN on log
// with its cause: a failover to a read-only node and back heals by itself.
func NewPool(ctx context.Context, cfg *pgxpool.Config, log zerolog.Logger) (*pgxpool.Pool, error) {
	guard := &sessionGuard{}
	guard.log.Store(&log)
	cfg.ConnConfig.Tracer = guard
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	guard.pool.Store(pool)
	return pool, nil
}

func (g *sessionGuard) check(err error) {
	var pgErr *pgconn.PgError
	pool := g.pool.Load()
	if err == nil || pool == nil || !errors.As(err, &pgErr) || !badSessionStates[pgErr.Code] {
		return
	}
	now := time.Now().UnixNano()
	last := g.last.Load()
	if now-last < int64(recycleEvery) || !g.last.CompareAndSwap(last, now) {
		return
	}
	g.log.Load().Warn().Str("sqlstate", pgErr.Code).Str("cause", pgErr.Message).
		Msg("PostgreSQL session is no good (read-only or shutting down); recycling the pooled connections")
	pool.Reset()
}

func (g *sessionGuard) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	return ctx
}

func (g *sessionGuard) TraceQueryEnd(_ context.Context, _ *pgx.Conn, d pgx.TraceQueryEndData) {
	g.check(d.Err)
}

func (g *sessionGuard) TraceCopyFromStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceCopyFromStartData) context.Context {
	return ctx
}

func (g *sessionGuard) TraceCopyFromEnd(_ context.Context, _ *pgx.Conn, d pgx.TraceCopyFromEndData) {
	g.check(d.Err)
}
