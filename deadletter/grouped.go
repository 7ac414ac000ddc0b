package deadletter

import (
	"regexp"
	"strings"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/dlqops/dlq/internal/headers"
	"github.com/dlqops/dlq/internal/routes"
)

// DefaultGroupTopicTemplate is the worker's default group_topic_template: a consumer
// group's own redrive topic of a topic.
const DefaultGroupTopicTemplate = routes.DefaultGroupTopicTemplate

// outcomeOtherGroup counts records a redrive addressed to another consumer group.
const outcomeOtherGroup = "skipped_other_group"

// subscriptions are the topics a consumer of group reads: its topics, and its group's
// redrive topic of each of them named by template, as a pattern that matches that one
// topic, so the subscription neither fails nor warns while the topic does not exist and
// takes it up once it does (at the next metadata refresh). Patterns among topics get no
// group topic: their group topics have no single name.
func subscriptions(topics []string, group, template string, own bool) []string {
	subs := append([]string(nil), topics...)
	if !own {
		return subs
	}
	for _, t := range topics {
		if strings.HasPrefix(t, "^") {
			continue
		}
		subs = append(subs, "^"+regexp.QuoteMeta(routes.GroupTopic(template, t, group))+"$")
	}
	return subs
}

// addressedElsewhere reports whether m is a redrive addressed to another consumer group
// than group (dlq-target-group, redrive_to group_header): that group failed it, this one
// already handled it. The last occurrence of the header wins, as for every header the
// worker reads.
func addressedElsewhere(m *kafka.Message, group string) bool {
	target, found := "", false
	for _, h := range m.Headers {
		if h.Key == headers.KeyTargetGroup {
			target, found = string(h.Value), true
		}
	}
	return found && target != "" && target != group
}
