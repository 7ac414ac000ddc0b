package redrive

import (
	"context"
	"fmt"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
)

// topicIDs remembers the topic id of each source topic the worker resolved a share
// group's dead letter in. A topic deleted and re-created under the same name starts its
// offsets at 0 again, so a dead letter's coordinates then name an unrelated record; the
// topic id the broker reports is what tells the two topics apart. Owned by the loop
// goroutine.
type topicIDs struct {
	describe func(topic string) (id kafka.UUID, exists bool, err error)
	seen     map[string]topicSighting
}

// topicSighting is what the worker saw of a source topic.
type topicSighting struct {
	id       kafka.UUID
	replaced string    // the id seen before this one ("" when none): the topic was re-created
	since    time.Time // when the worker first saw id: the topic existed no earlier than the one before
	checked  time.Time // when the broker last confirmed id
}

func newTopicIDs(describe func(string) (kafka.UUID, bool, error)) *topicIDs {
	return &topicIDs{describe: describe, seen: map[string]topicSighting{}}
}

// expire makes every topic's id be asked again before its next use.
func (t *topicIDs) expire() {
	for topic, s := range t.seen {
		s.checked = time.Time{}
		t.seen[topic] = s
	}
}

// recreated says why a dead letter written at written cannot point at a record of topic
// as it is now ("" when it may): the worker saw topic under another id, and the dead
// letter is older than the first sighting of the current one, so its source record may
// be the old topic's. A dead letter written between the re-creation and that sighting is
// parked as well: which topic it named cannot be told. changed reports that the id
// changed at this call (the fetcher drops what it read of the old topic). The id is asked
// again at a topic's first dead letter of each run, and within a run once it is
// watermarksTTL old.
func (t *topicIDs) recreated(topic string, written time.Time) (why string, changed bool, err error) {
	s, known := t.seen[topic]
	if !known || time.Since(s.checked) >= watermarksTTL {
		id, exists, err := t.describe(topic)
		switch {
		case err != nil:
			return "", false, err
		case !exists:
			return "topic " + topic + " does not exist", false, nil
		}
		now := time.Now()
		switch {
		case !known:
			s = topicSighting{id: id, since: now}
		case id != s.id:
			s = topicSighting{id: id, replaced: s.id.String(), since: now}
			changed = true
		}
		s.checked = now
		t.seen[topic] = s
	}
	if s.replaced != "" && written.Before(s.since) {
		return fmt.Sprintf("topic %s was re-created since the dead letter was written (topic id %s, now %s): its record at these coordinates is not the one the group rejected",
			topic, s.replaced, s.id), changed, nil
	}
	return "", changed, nil
}

// describeTopicID asks the cluster for topic's id through a.
func describeTopicID(a *kafka.AdminClient, topic string) (kafka.UUID, bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	res, err := a.DescribeTopics(ctx, kafka.NewTopicCollectionOfTopicNames([]string{topic}))
	if err != nil {
		return kafka.UUID{}, false, err
	}
	if len(res.TopicDescriptions) != 1 {
		return kafka.UUID{}, false, fmt.Errorf("describe topic %s: %d answers", topic, len(res.TopicDescriptions))
	}
	d := res.TopicDescriptions[0]
	switch d.Error.Code() {
	case kafka.ErrNoError:
		return d.TopicID, true, nil
	case kafka.ErrUnknownTopicOrPart, kafka.ErrUnknownTopic, kafka.ErrUnknownTopicID:
		return kafka.UUID{}, false, nil
	}
	return kafka.UUID{}, false, d.Error
}
