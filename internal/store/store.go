// Package store is the PostgreSQL parking store: dead-letter records that wait on time
// (scheduled) or on a human (parked), redrive runs and their ledger, operator jobs, route
// controls and the audit log.
//
// Store is the composition of the store's concerns, each a type of its own over one pool:
// Records, Jobs, Ledger, Runs, AuditLog and Housekeeping. A caller that needs one concern
// takes that type (or an interface of the few methods it calls); Store promotes every
// concern's methods for the binaries that wire them all.
//
// Every method returns the package's own types and errors: ErrNotFound, ErrConflict,
// *ValidationError, or *Error whose Retriable field (see IsRetriable) tells a transient
// failure (PostgreSQL restarting, connection reset, deadlock) from a permanent one. A pgxpool
// replaces broken connections by itself, so after a retriable error the same Store recovers
// once the server is back.
package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/rs/zerolog"
)

// Store is safe for concurrent use.
type Store struct {
	*db
	*Records
	*Jobs
	*Ledger
	*Runs
	*AuditLog
	*Housekeeping
	owned bool
}

// db is what every concern shares: the pool, the logger and the clock.
type db struct {
	pool  *pgxpool.Pool
	log   zerolog.Logger
	clock func() time.Time
}

// Records are the dead letters themselves: a redrive stores, claims and marks them, an
// operator lists, counts and changes them one at a time.
type Records struct{ *db }

// Jobs are operator jobs (bulk replays and discards) and the replay leases and batches
// they hold while they run.
type Jobs struct{ *db }

// Ledger is where each consumer group committed its DLQ partitions, and the ranges it did
// not read in order.
type Ledger struct{ *db }

// Runs are the redrive runs and their ledger rows, and what workers and operators share
// about each route: registration, pause and run-now requests, next run, the targets a job
// runner publishes (and the destinations of records they judge), the source topics' ids
// and the oldest due record a worker's health reads.
type Runs struct{ *db }

// AuditLog is the record of every operator action, and what the conservation audit reads.
type AuditLog struct{ *db }

// Housekeeping is retention and the backlog count, run by one instance at a time.
type Housekeeping struct{ *db }

// Option configures a Store.
type Option func(*Store)

// WithLogger sets the logger; the default discards.
func WithLogger(l zerolog.Logger) Option {
	return func(s *Store) { s.log = l.With().Str("component", "store").Logger() }
}

// WithClock sets the clock used for every timestamp the store writes and for "now" in
// claims and leases; the default is time.Now.
func WithClock(clock func() time.Time) Option {
	return func(s *Store) { s.clock = clock }
}

// Open connects a pool to connString (a postgres:// URL or DSN; pool_max_conns and the like
// apply) and checks that the server answers.
// Its sessions are recycled as NewPool's are.
func Open(ctx context.Context, connString string, opts ...Option) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(connString)
	if err != nil {
		return nil, interpretError(fmt.Errorf("open pool: %w", err))
	}
	s := New(nil, opts...)
	pool, err := NewPool(ctx, cfg, s.log)
	if err != nil {
		return nil, interpretError(fmt.Errorf("open pool: %w", err))
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, interpretError(fmt.Errorf("ping: %w", err))
	}
	s.pool, s.owned = pool, true
	return s, nil
}

// New wraps a pool the caller owns; Close leaves it open.
func New(pool *pgxpool.Pool, opts ...Option) *Store {
	d := &db{pool: pool, log: zerolog.Nop(), clock: time.Now}
	s := &Store{db: d, Records: &Records{d}, Jobs: &Jobs{d}, Ledger: &Ledger{d}, Runs: &Runs{d},
		AuditLog: &AuditLog{d}, Housekeeping: &Housekeeping{d}}
	for _, o := range opts {
		o(s)
	}
	return s
}

// Close closes the pool if Open created it.
func (s *Store) Close() {
	if s.owned {
		s.pool.Close()
	}
}

// Ping checks that the database answers, for readiness probes.
func (s *Store) Ping(ctx context.Context) error {
	return interpretError(s.pool.Ping(ctx))
}

// now is the clock at PostgreSQL's microsecond precision, so that what we write is what
// we read back.
func (s *db) now() time.Time {
	return s.clock().UTC().Truncate(time.Microsecond)
}

// inTx runs fn in a transaction, committed when fn returns nil.
func (s *db) inTx(ctx context.Context, fn func(pgx.Tx) error) error {
	return interpretError(pgx.BeginFunc(ctx, s.pool, fn))
}
