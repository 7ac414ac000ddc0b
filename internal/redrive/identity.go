package redrive

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/dlqops/dlq/internal/kafkaclient"
)

// A static member is fenced when a consumer joins its group with its group.instance.id:
// librdkafka raises a fatal error whose code is FENCED_INSTANCE_ID on the older one.
// Either another process uses this worker's identity (two workers given one
// group_instance_id), or the worker fenced itself by its own rejoin after a broker
// outage (confluent-kafka-go#494). Exiting cures only the second: with a duplicate the
// restarted worker fences the other, which exits and fences it back, in a crash loop.
//
// So the fenced route says so at once (not ready, and a log line), then tells the two
// apart by whether the identity stays held: this worker's own fatal consumer sends no
// heartbeat, so its member leaves the group after the session timeout, while another
// worker's stays. Held: the route stays stopped and not ready, naming the duplicate,
// until the worker is restarted with an identity of its own. Gone: the worker exits, as
// on any fatal error, and its restart rejoins.

// identityMargin is how long past the session timeout a member that sends no heartbeat
// may still be listed.
const identityMargin = 5 * time.Second

// errDuplicateIdentity marks the route's stop by a duplicate group.instance.id.
var errDuplicateIdentity = errors.New("duplicate group.instance.id")

// identity is what a route needs to judge a fence: its static membership and how long
// the group keeps a silent member.
type identity struct {
	kafka    kafkaclient.Config
	group    string
	instance string        // the consumer's group.instance.id, "" without static membership
	session  time.Duration // the consumer's session.timeout.ms
}

func newIdentity(k kafkaclient.Config, group string, cc kafka.ConfigMap) identity {
	id := identity{kafka: k, group: group, session: 45 * time.Second} // librdkafka's default
	if v, ok := cc["group.instance.id"].(string); ok {
		id.instance = v
	}
	if ms, err := strconv.Atoi(fmt.Sprint(cc["session.timeout.ms"])); err == nil && ms > 0 {
		id.session = time.Duration(ms) * time.Millisecond
	}
	return id
}

// fenced reports whether err is the fence of this static member.
func (id identity) fenced(err error) bool {
	var ke kafka.Error
	return id.instance != "" && errors.As(err, &ke) && ke.Code() == kafka.ErrFencedInstanceID
}

// fencedReason is the readiness failure from the fence until the verdict.
func (id identity) fencedReason() string {
	return fmt.Sprintf("fenced: a consumer joined group %s with this route's group.instance.id %s (another worker with this identity, or this worker's own rejoin: known within %s)",
		id.group, id.instance, id.session+identityMargin)
}

// heldByAnother waits out the session timeout and reports whether a member still holds
// the identity: then it is no consumer of this worker's (errDuplicateIdentity, with the
// member). nil when the identity is free, or when ctx ended first.
func (id identity) heldByAnother(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return nil
	case <-time.After(id.session + identityMargin):
	}
	admin, err := kafkaclient.NewAdmin(id.kafka)
	if err != nil {
		return nil
	}
	defer admin.Close()
	for attempt := 0; attempt < 5 && ctx.Err() == nil; attempt++ {
		cctx, cancel := context.WithTimeout(ctx, callTimeout)
		res, err := admin.DescribeConsumerGroups(cctx, []string{id.group})
		cancel()
		if err != nil || len(res.ConsumerGroupDescriptions) != 1 || res.ConsumerGroupDescriptions[0].Error.Code() != kafka.ErrNoError {
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
			continue
		}
		for _, m := range res.ConsumerGroupDescriptions[0].Members {
			if m.GroupInstanceID == id.instance {
				return fmt.Errorf("%w: %s is held by another live consumer of group %s (member %s, host %s): give each worker its own group_instance_id, then restart this one",
					errDuplicateIdentity, id.instance, id.group, m.ConsumerID, m.Host)
			}
		}
		return nil
	}
	return nil
}
