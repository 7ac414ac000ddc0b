package redrive

import (
	"context"
	"fmt"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/dlqops/dlq/internal/store"
)

// topicIDs tells whether a source topic was re-created since a dead letter was written.
// A topic deleted and re-created under the same name starts its offsets at 0 again, so
// a dead letter's coordinates then name an unrelated record; the topic id the broker
// reports is what tells the two topics apart. What workers saw of each topic's id is
// recorded in PostgreSQL (store.SightTopicID): shared by every worker and kept across
// restarts. Owned by the loop goroutine.
type topicIDs struct {
	describe func(topic string) (id kafka.UUID, exists bool, err error)
	sight    func(topic, id string) (store.TopicSighting, error)
	seen     map[string]topicSighting
}

// topicSighting is the recorded sighting of a topic and when the broker last confirmed it.
type topicSighting struct {
	store.TopicSighting
	checked time.Time
}

func newTopicIDs(describe func(string) (kafka.UUID, bool, error), sight func(topic, id string) (store.TopicSighting, error)) *topicIDs {
	return &topicIDs{describe: describe, sight: sight, seen: map[string]topicSighting{}}
}

// expire makes every topic's id be asked again before its next use.
func (t *topicIDs) expire() {
	for topic, s := range t.seen {
		s.checked = time.Time{}
		t.seen[topic] = s
	}
}

// recreated says why a dead letter written at written cannot point at a record of topic
// as it is now ("" when it may): the topic had another id before, and the dead letter is
// older than the first sighting of the current one, so its source record may be the old
// topic's. A dead letter written between the re-creation and that sighting is parked as
// well: which topic it named cannot be told. changed reports that the id differs from the
// one this worker saw last (the fetcher drops what it read of the old topic). The id is
// asked again at a topic's first dead letter of each run, and within a run once it is
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
		sighting, err := t.sight(topic, id.String())
		if err != nil {
			return "", false, err
		}
		changed = known && sighting.ID != s.ID
		s = topicSighting{TopicSighting: sighting, checked: time.Now()}
		t.seen[topic] = s
	}
	if s.Replaced != "" && written.Before(s.Since) {
		return fmt.Sprintf("topic %s was re-created since the dead letter was written (topic id %s, now %s): its record at these coordinates is not the one the group rejected",
			topic, s.Replaced, s.ID), changed, nil
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
