package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/dlqops/dlq/internal/store"
)

// Problem is an RFC 9457 problem details body. Type is stable; Detail never carries an
// internal cause.
type Problem struct {
	Type      string `json:"type"`
	Title     string `json:"title"`
	Status    int    `json:"status"`
	Detail    string `json:"detail,omitempty"`
	Field     string `json:"field,omitempty"`
	RequestID string `json:"request_id,omitempty"`
	// Count is the current count of a selection whose confirmation did not match.
	Count *int64 `json:"count,omitempty"`
	// NoPayload is how many records of a refused replay have no payload.
	NoPayload *int64 `json:"no_payload,omitempty"`
	// RetryAfter is the Retry-After of a 429, in seconds.
	RetryAfter int `json:"-"`
	// outcome is the refusal's audit outcome when its status does not tell it.
	outcome string
}

func (p *Problem) Error() string {
	if p.Field != "" {
		return fmt.Sprintf("%d %s: %s: %s", p.Status, p.Title, p.Field, p.Detail)
	}
	return fmt.Sprintf("%d %s: %s", p.Status, p.Title, p.Detail)
}

// The stable problem types, each with its status and title.
const typePrefix = "urn:dlq:problem:"

var (
	probInvalidParameter = Problem{Type: typePrefix + "invalid-parameter", Status: http.StatusBadRequest, Title: "Invalid parameter"}
	probInvalidBody      = Problem{Type: typePrefix + "invalid-body", Status: http.StatusBadRequest, Title: "Invalid request body"}
	probUnauthorized     = Problem{Type: typePrefix + "unauthorized", Status: http.StatusUnauthorized, Title: "Unauthorized"}
	probForbidden        = Problem{Type: typePrefix + "forbidden", Status: http.StatusForbidden, Title: "Forbidden"}
	probNotFound         = Problem{Type: typePrefix + "not-found", Status: http.StatusNotFound, Title: "Not found"}
	probMethod           = Problem{Type: typePrefix + "method-not-allowed", Status: http.StatusMethodNotAllowed, Title: "Method not allowed"}
	probConflict         = Problem{Type: typePrefix + "conflict", Status: http.StatusConflict, Title: "Conflict"}
	probCountMismatch    = Problem{Type: typePrefix + "count-mismatch", Status: http.StatusConflict, Title: "Confirmed count does not match"}
	probTooLarge         = Problem{Type: typePrefix + "body-too-large", Status: http.StatusRequestEntityTooLarge, Title: "Request body too large"}
	probTooMany          = Problem{Type: typePrefix + "too-many-requests", Status: http.StatusTooManyRequests, Title: "Too many requests"}
	probUnavailable      = Problem{Type: typePrefix + "unavailable", Status: http.StatusServiceUnavailable, Title: "Database unavailable"}
	probClientClosed     = Problem{Type: typePrefix + "client-closed-request", Status: statusClientClosed, Title: "Client closed request"}
	probInternal         = Problem{Type: typePrefix + "internal", Status: http.StatusInternalServerError, Title: "Internal error"}
)

// statusClientClosed is the status logged and counted for a request whose client went
// away before its answer (nginx's 499): no client sees it, and it is not a server error.
const statusClientClosed = 499

// errClientGone is the refusal of a read whose client went away.
var errClientGone = probClientClosed.with("the client went away; nothing was changed")

// mutationTimeout bounds a change that runs on after its client went away.
const mutationTimeout = 30 * time.Second

// with returns a copy of p with detail.
func (p Problem) with(detail string) *Problem {
	p.Detail = detail
	return &p
}

// badParam is a 400 naming the parameter or body field that is wrong.
func badParam(field, format string, args ...any) *Problem {
	p := probInvalidParameter.with(fmt.Sprintf(format, args...))
	p.Field = field
	return p
}

// retryAfterSeconds is what a 503 asks clients to wait: a pool reconnects within seconds.
const retryAfterSeconds = 5

// problemFor maps an error to what the client may see, and says whether it is the
// server's fault (logged at error with its cause).
func problemFor(err error) (p *Problem, internal bool) {
	var ve *store.ValidationError
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &p):
		return p, false
	case errors.As(err, &mbe):
		return probTooLarge.with(fmt.Sprintf("the body exceeds %d bytes", mbe.Limit)), false
	case errors.As(err, &ve):
		return badParam(ve.Field, "%s", ve.Reason), false
	case errors.Is(err, store.ErrIdempotencyKeyReused):
		return probConflict.with("this Idempotency-Key was used for a different request"), false
	case errors.Is(err, store.ErrTooManyJobs):
		return tooMany("too many pending or running jobs of this caller (limits.max_active_jobs); wait for one to finish", 5*time.Second), false
	case errors.Is(err, store.ErrStatementTimeout):
		return probUnavailable.with("the query took longer than the database's statement timeout; narrow the selection"), false
	case errors.Is(err, store.ErrNotFound):
		return probNotFound.with("no such resource"), false
	case errors.Is(err, store.ErrConflict):
		return probConflict.with("the current state does not allow this (already replayed, replaying, discarded, or held by another job)"), false
	case store.IsRetriable(err):
		return probUnavailable.with("the database is unavailable; retry later"), true
	}
	return probInternal.with("see the server log for the request id"), true
}

func writeProblem(w http.ResponseWriter, p *Problem, requestID string) {
	p.RequestID = requestID
	switch p.Status {
	case http.StatusServiceUnavailable:
		w.Header().Set("Retry-After", strconv.Itoa(retryAfterSeconds))
	case http.StatusTooManyRequests:
		w.Header().Set("Retry-After", strconv.Itoa(p.RetryAfter))
	}
	if p.Status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="dlq-admin"`)
	}
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(p.Status)
	_ = json.NewEncoder(w).Encode(p) // the client went away; nothing to do
}
