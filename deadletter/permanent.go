package deadletter

import "errors"

// Permanent marks err as a failure no retry can cure (a payload that cannot be
// deserialized, a record that fails validation). Publish writes the mark as the
// dlq-error-permanent header, and the orchestrator's worker parks such a record for a
// human on its first read, on every route, instead of redriving it max_retries times.
// The error's class and message stay err's own. Permanent(nil) is nil.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &permanentError{err: err}
}

// IsPermanent reports whether err, or any error it wraps, was marked by Permanent.
func IsPermanent(err error) bool {
	var p *permanentError
	return errors.As(err, &p)
}

type permanentError struct{ err error }

func (p *permanentError) Error() string { return p.err.Error() }
func (p *permanentError) Unwrap() error { return p.err }
