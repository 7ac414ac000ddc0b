package rules

import (
	"strconv"

	"github.com/dlqops/dlq/internal/headers"
	"github.com/dlqops/dlq/internal/routes"
	"github.com/dlqops/dlq/internal/store"
)

// Address is where one hop of a record goes: the topic, and the consumer group it is
// addressed to through dlq-target-group ("" for every group of the topic).
type Address struct {
	Topic string
	Group string
}

// Redrive is where the route's redrive of a record goes: its original topic origin, or,
// by the route's redrive_to, the topic of group (the group that failed it) or origin
// addressed to group.
func (r *Rules) Redrive(origin, group string) (Address, *Refusal) {
	return r.Replay(origin, "", group, r.redriveTo)
}

// Replay is where an operator's replay of a record goes: explicit when the operator
// named a topic, else as mode (a redrive_to value; "" is source) says. An explicit topic
// is never rewritten to a group's; group_header still addresses it to group. Every topic
// must be allowed, a group's topic as any other.
func (r *Rules) Replay(origin, explicit, group, mode string) (Address, *Refusal) {
	if routes.NeedsGroup(mode) && group == "" {
		return Address{}, &Refusal{Reason: store.ReasonUnknownGroup,
			Detail: "redrive_to " + mode + " needs the consumer group that failed the record, and no header names it"}
	}
	if mode == routes.RedriveToGroupTopic && explicit == "" {
		if origin == "" || !headers.ValidTopicName(origin) {
			// The original topic is checked as a target would be, for the same refusal.
			_, refused := r.Target(origin, "")
			return Address{}, refused
		}
		topic := routes.GroupTopic(r.groupTopic, origin, group)
		if !headers.ValidTopicName(topic) {
			// The group comes from the record's headers: anybody's text.
			return Address{}, &Refusal{Reason: store.ReasonUnroutable,
				Detail: "group " + strconv.Quote(group) + " makes " + strconv.Quote(topic) + ", not a valid topic name"}
		}
		explicit = topic
	}
	topic, refused := r.Target(origin, explicit)
	if refused != nil {
		return Address{}, refused
	}
	a := Address{Topic: topic}
	if mode == routes.RedriveToGroupHeader {
		a.Group = group
	}
	return a, nil
}
