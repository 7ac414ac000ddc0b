package redrive

import (
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
}

func compileRoute(rc routes.Config) route {
	return route{Config: rc, maxRetries: *rc.MaxRetries, policy: rc.Backoff.Policy(), rules: rules.New(rc)}
}
