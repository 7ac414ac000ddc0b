package redrive

import (
	"fmt"

	"github.com/dlqops/dlq/internal/backoff"
	"github.com/dlqops/dlq/internal/delivery/rules"
	"github.com/dlqops/dlq/internal/routes"
)

// route is a validated routes.Config in the form the engine uses.
type route struct {
	routes.Config
	maxRetries int
	policy     backoff.Policy
	rules      *rules.Rules
	// notRetryable is the route's not_retryable list.
	notRetryable *routes.ErrorMatcher
}

func compileRoute(rc routes.Config) (route, error) {
	notRetryable, err := routes.CompileErrorMatcher(rc.NotRetryable)
	if err != nil {
		return route{}, fmt.Errorf("routes[%s].not_retryable: %w", rc.Name, err)
	}
	return route{Config: rc, maxRetries: *rc.MaxRetries, policy: rc.Backoff.Policy(), rules: rules.New(rc),
		notRetryable: notRetryable}, nil
}
