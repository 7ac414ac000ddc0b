package routes

import (
	"strings"

	"github.com/dlqops/dlq/internal/headers"
)

// Where a route redrives a record (redrive_to): to its source topic, read again by every
// consumer group of that topic; to a topic of the failing group's own; or to the source
// topic addressed to the failing group (dlq-target-group), which the other groups skip.
const (
	RedriveToSource      = "source"
	RedriveToGroupTopic  = "group_topic"
	RedriveToGroupHeader = "group_header"
)

// DefaultGroupTopicTemplate names a failing group's own redrive topic.
const DefaultGroupTopicTemplate = "{topic}.redrive.{group}"

// GroupTopic is the topic template names for the records of topic failed by group.
func GroupTopic(template, topic, group string) string {
	return strings.NewReplacer("{topic}", topic, "{group}", group).Replace(template)
}

// NeedsGroup reports whether mode sends a record to its failing group alone, so that a
// record whose group is unknown cannot go.
func NeedsGroup(mode string) bool {
	return mode == RedriveToGroupTopic || mode == RedriveToGroupHeader
}

// ValidRedriveTo reports whether mode is a redrive_to value.
func ValidRedriveTo(mode string) bool {
	return mode == RedriveToSource || NeedsGroup(mode)
}

// validateGrouped checks redrive_to, group_topic_template and metric_groups.
func (r *Config) validateGrouped(at func(key, format string, args ...any) error) []error {
	var errs []error
	if !ValidRedriveTo(r.RedriveTo) {
		errs = append(errs, at("redrive_to", "must be %q, %q or %q, got %q", RedriveToSource, RedriveToGroupTopic, RedriveToGroupHeader, r.RedriveTo))
	}
	if !strings.Contains(r.GroupTopicTemplate, "{group}") {
		errs = append(errs, at("group_topic_template", "%q must contain {group}", r.GroupTopicTemplate))
	} else if example := GroupTopic(r.GroupTopicTemplate, "orders", "svc-a"); !headers.ValidTopicName(example) {
		errs = append(errs, at("group_topic_template", "%q does not make a topic name (%q for topic orders, group svc-a)", r.GroupTopicTemplate, example))
	}
	for _, g := range r.MetricGroups {
		if g == "" || g == MetricGroupOther || g == MetricGroupUnknown {
			errs = append(errs, at("metric_groups", "%q is not a consumer group name here", g))
		}
	}
	return errs
}

// The metric label of a group that metric_groups does not list, and of no group.
const (
	MetricGroupOther   = "other"
	MetricGroupUnknown = "unknown"
)

// MetricGroup is the label group is counted under: itself when the route's metric_groups
// lists it, "unknown" when no header named one, "other" otherwise. Group names come from
// the records' headers, anybody's text: only configured ones become labels.
func (r *Config) MetricGroup(group string) string {
	switch {
	case group == "":
		return MetricGroupUnknown
	case containsString(r.MetricGroups, group):
		return group
	}
	return MetricGroupOther
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
