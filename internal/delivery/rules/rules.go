// Package rules is the delivery path's decision of where a record may go: the route's
// allowed_targets and the headers it strips. It is apart from package delivery, which
// talks to Kafka, so that dlq-admin refuses a forbidden replay up front with the same
// code the job runner applies again when it produces.
package rules

import (
	"regexp"
	"strconv"
	"strings"

	"github.com/dlqops/dlq/internal/headers"
	"github.com/dlqops/dlq/internal/routes"
	"github.com/dlqops/dlq/internal/store"
)

// Rules are one route's delivery rules: the topics its records may go to and the foreign
// headers dropped on the way.
type Rules struct {
	allowed []*regexp.Regexp // nil allows all
	// Encode is what the outgoing headers drop.
	Encode headers.EncodeOptions
	// redriveTo and groupTopic are the route's redrive_to and group_topic_template.
	redriveTo, groupTopic string
}

// New compiles a validated route.
func New(rc routes.Config) *Rules {
	r := &Rules{Encode: headers.DefaultEncodeOptions(), redriveTo: rc.RedriveTo, groupTopic: rc.GroupTopicTemplate}
	if r.groupTopic == "" {
		r.groupTopic = routes.DefaultGroupTopicTemplate
	}
	for _, t := range rc.AllowedTargets {
		if !strings.HasPrefix(t, "^") {
			t = "^" + regexp.QuoteMeta(t) + "$"
		}
		r.allowed = append(r.allowed, regexp.MustCompile(t)) // validated
	}
	r.Encode.StripKeys = append(r.Encode.StripKeys, rc.StripHeaders...)
	r.Encode.StripPrefixes = append(r.Encode.StripPrefixes, rc.StripHeaderPrefixes...)
	return r
}

// Allows reports whether the route's records may go to topic.
func (r *Rules) Allows(topic string) bool {
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

// Refusal is why a record may not go where it was asked to; Reason is the one it is
// parked with.
type Refusal struct {
	Reason store.Reason
	Detail string
}

func (r *Refusal) Error() string { return string(r.Reason) + ": " + r.Detail }

// Target is the topic a record of original topic origin goes to: origin itself, or
// explicit when an operator named one (the admin API admits only its replay_topics).
// Either way it must be allowed: a record parked target_not_allowed leaves only through
// an explicit, allowed target.
func (r *Rules) Target(origin, explicit string) (string, *Refusal) {
	target := explicit
	if target == "" {
		target = origin
	}
	switch {
	case target == "":
		return "", &Refusal{Reason: store.ReasonUnroutable, Detail: "no original topic and no target topic given"}
	case !headers.ValidTopicName(target):
		// An original topic from hostile headers (kept Go-quoted when its bytes are not
		// text) is never a produce target.
		return "", &Refusal{Reason: store.ReasonUnroutable, Detail: strconv.Quote(target) + " is not a valid topic name"}
	case !r.Allows(target):
		return "", &Refusal{Reason: store.ReasonTargetNotAllowed, Detail: target + " is not in allowed_targets"}
	}
	return target, nil
}
