package main

import (
	"fmt"
	"time"

	"github.com/dlqops/dlq/internal/reltime"
)

// flagTime reads a time flag with the API's parser and sends the time it names as RFC 3339,
// so that "-2h" means two hours before the command ran; nil when the flag is empty.
func flagTime(flag, v string, now time.Time) (*string, error) {
	if v == "" {
		return nil, nil
	}
	t, err := reltime.Parse(v, now)
	if err != nil {
		return nil, fmt.Errorf("--%s: %q %w", flag, v, err)
	}
	s := t.UTC().Format(time.RFC3339Nano)
	return &s, nil
}
