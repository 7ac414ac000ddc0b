package redrive

import (
	"regexp"
	"strings"

	"github.com/dlqops/dlq/internal/headers"
	"github.com/dlqops/dlq/internal/redrive/backoff"
	"github.com/dlqops/dlq/internal/redrive/routes"
)

// route is a validated routes.Config in the form the engine uses.
type route struct {
	routes.Config
	maxRetries int
	policy     backoff.Policy
	allowed    []*regexp.Regexp // nil allows all
	encodeOpts headers.EncodeOptions
}

func compileRoute(rc routes.Config) route {
	r := route{Config: rc, maxRetries: *rc.MaxRetries, policy: rc.Backoff.Policy()}
	for _, t := range rc.AllowedTargets {
		if !strings.HasPrefix(t, "^") {
			t = "^" + regexp.QuoteMeta(t) + "$"
		}
		r.allowed = append(r.allowed, regexp.MustCompile(t)) // validated
	}
	r.encodeOpts = headers.DefaultEncodeOptions()
	r.encodeOpts.StripKeys = append(r.encodeOpts.StripKeys, rc.StripHeaders...)
	r.encodeOpts.StripPrefixes = append(r.encodeOpts.StripPrefixes, rc.StripHeaderPrefixes...)
	return r
}

func (r *route) allows(topic string) bool {
	if len(r.allowed) == 0 {
		return true
	}
	for _, re := range r.allowed {
		if re.MatchString(topic) {
			return true
		}
	}
	return false
}
