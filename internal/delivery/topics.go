package delivery

import (
	"math/rand/v2"
	"sync"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/dlqops/dlq/internal/partitioner"
)

// Metadata is the part of a Kafka client Topics asks: a producer's GetMetadata.
type Metadata interface {
	GetMetadata(topic *string, allTopics bool, timeoutMs int) (*kafka.Metadata, error)
}

// Topics caches which topics exist and their partition counts. It only reads metadata:
// a topic that does not exist is never created (the producers set
// allow.auto.create.topics false, see ProducerConfig). Safe for concurrent use.
type Topics struct {
	md      Metadata
	ttl     time.Duration
	timeout time.Duration

	mu    sync.Mutex
	known map[string]topicInfo
}

type topicInfo struct {
	partitions int32 // 0: the topic does not exist
	at         time.Time
}

// NewTopics caches md's answers for ttl; each lookup waits at most timeout.
func NewTopics(md Metadata, ttl, timeout time.Duration) *Topics {
	return &Topics{md: md, ttl: ttl, timeout: timeout, known: map[string]topicInfo{}}
}

// Partition is the partition a record goes to in topic: original when it still exists
// there, else the Java producer's choice for the key, else one at random (a null key, as
// librdkafka's default partitioner does, but chosen here: a record's partition is known
// when it is produced). ok is false when the topic does not exist; err is
// set when the cluster did not answer.
func (t *Topics) Partition(topic string, original int32, key []byte) (p int32, ok bool, err error) {
	n, err := t.Partitions(topic)
	if err != nil || n == 0 {
		return 0, false, err
	}
	switch {
	case original >= 0 && original < n:
		return original, true, nil
	case key != nil:
		return partitioner.ForKey(key, n), true, nil
	}
	return rand.Int32N(n), true, nil
}

// Partitions is topic's partition count, 0 when it does not exist.
func (t *Topics) Partitions(topic string) (int32, error) {
	t.mu.Lock()
	info, ok := t.known[topic]
	t.mu.Unlock()
	if ok && time.Since(info.at) < t.ttl {
		return info.partitions, nil
	}
	md, err := t.md.GetMetadata(&topic, false, int(t.timeout/time.Millisecond))
	if err != nil {
		return 0, err
	}
	tm, ok := md.Topics[topic]
	info = topicInfo{at: time.Now()}
	switch {
	case !ok, tm.Error.Code() == kafka.ErrUnknownTopicOrPart, tm.Error.Code() == kafka.ErrUnknownTopic:
	case tm.Error.Code() != kafka.ErrNoError:
		return 0, tm.Error
	default:
		info.partitions = int32(len(tm.Partitions))
	}
	t.mu.Lock()
	t.known[topic] = info
	t.mu.Unlock()
	return info.partitions, nil
}
