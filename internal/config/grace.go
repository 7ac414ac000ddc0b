package config

import (
	"fmt"
	"time"
)

// ValidateGrace checks a shutdown grace period.
func ValidateGrace(d time.Duration) error {
	if d <= 0 {
		return fmt.Errorf("shutdown_grace: must be positive, got %s", d)
	}
	return nil
}
