package api

import (
	"errors"
	"fmt"
)

// Limits bound what callers may consume (config key limits). Zero values take the
// defaults.
type Limits struct {
	// UnauthenticatedAuditPerSecond bounds the audit rows written for requests without a
	// valid token (with a burst of ten), so that the audit log cannot be used to fill the
	// disk; the refusals beyond are counted in dlq_admin_unaudited_refusals_total.
	UnauthenticatedAuditPerSecond float64 `yaml:"unauthenticated_audit_per_second"`
}

// unauthenticatedAuditBurst is how many refusals of unauthenticated requests are audited at
// once before the rate applies.
const unauthenticatedAuditBurst = 10

// WithDefaults fills the zero limits.
func (l *Limits) WithDefaults() {
	if l.UnauthenticatedAuditPerSecond == 0 {
		l.UnauthenticatedAuditPerSecond = 1
	}
}

// Validate names the first limit that is out of range.
func (l Limits) Validate() error {
	var errs []error
	if l.UnauthenticatedAuditPerSecond <= 0 {
		errs = append(errs, fmt.Errorf("limits.unauthenticated_audit_per_second: must be positive, got %g", l.UnauthenticatedAuditPerSecond))
	}
	return errors.Join(errs...)
}
