package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

var (
	// ErrNotFound: the row does not exist (or no work is available to claim).
	ErrNotFound = errors.New("store: not found")
	// ErrConflict: the row exists but is not in a state that allows the change, another
	// caller changed it first, or the caller no longer holds its lease.
	ErrConflict = errors.New("store: conflict")
	// ErrTooManyJobs: the actor already has as many pending or running jobs as allowed.
	ErrTooManyJobs = errors.New("store: too many active jobs")
	// ErrStatementTimeout: PostgreSQL cancelled a statement that ran past the connection's
	// statement_timeout.
	ErrStatementTimeout = errors.New("store: statement timeout")
)

// ValidationError reports input the store refuses before touching the database, such as a
// malformed page cursor. It is the caller's fault and never retriable.
type ValidationError struct {
	Field  string
	Reason string
}

func (e *ValidationError) Error() string {
	return fmt.Sprintf("store: invalid %s: %s", e.Field, e.Reason)
}

// Error is a database failure. Retriable ones (connection refused or reset, server
// shutdown, serialization failure, deadlock, too many connections) are worth retrying after
// a back-off; the others will fail again.
type Error struct {
	Retriable bool
	Err       error
}

func (e *Error) Error() string {
	if e.Retriable {
		return "store (retriable): " + e.Err.Error()
	}
	return "store: " + e.Err.Error()
}

func (e *Error) Unwrap() error { return e.Err }

// IsRetriable reports whether err is a transient database failure.
func IsRetriable(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Retriable
}

// retriableSQLStates are the SQLSTATEs after which the same statement may succeed.
var retriableSQLStates = map[string]bool{
	"40001": true, // serialization_failure
	"40P01": true, // deadlock_detected
	"55P03": true, // lock_not_available
	"57P01": true, // admin_shutdown
	"57P02": true, // crash_shutdown
	"57P03": true, // cannot_connect_now
	"53300": true, // too_many_connections
	"53400": true, // configuration_limit_exceeded
}

// interpretError is the one place where pgx and network errors become store errors.
func interpretError(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return ErrNotFound
	}
	// Our own errors and cancellations pass through: the caller decided to stop.
	var ve *ValidationError
	var se *Error
	if errors.Is(err, ErrNotFound) || errors.Is(err, ErrConflict) || errors.As(err, &ve) ||
		errors.As(err, &se) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code {
		case "23505": // unique_violation
			return fmt.Errorf("%w: %s", ErrConflict, pgErr.Message)
		case "57014": // query_canceled: statement_timeout (a cancelled context returns its own error)
			return fmt.Errorf("%w: %s", ErrStatementTimeout, pgErr.Message)
		}
		// Class 08 is connection_exception.
		return &Error{Retriable: retriableSQLStates[pgErr.Code] || pgErr.Code[:2] == "08", Err: err}
	}
	return &Error{Retriable: isConnectionError(err), Err: err}
}

// isConnectionError reports failures of the connection itself: the server went away or
// cannot be reached.
func isConnectionError(err error) bool {
	var connectErr *pgconn.ConnectError
	var netErr net.Error
	return pgconn.SafeToRetry(err) ||
		errors.As(err, &connectErr) ||
		errors.As(err, &netErr) ||
		errors.Is(err, io.EOF) ||
		errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EPIPE)
}
