// Package kafkatest gives integration tests isolated topics on the broker named by
// KAFKA_BOOTSTRAP_SERVERS, and private throwaway brokers for tests that stop one.
package kafkatest

import (
	"context"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/dlqops/dlq/internal/testenv"
)

// Admin returns an admin client for bootstrap, closed when the test ends.
func Admin(t testing.TB, bootstrap string) *kafka.AdminClient {
	t.Helper()
	a, err := kafka.NewAdminClient(&kafka.ConfigMap{"bootstrap.servers": bootstrap})
	if err != nil {
		t.Fatalf("kafka admin client: %v", err)
	}
	t.Cleanup(a.Close)
	return a
}

// CreateTopic creates a topic with a unique name on bootstrap, deleted when the test
// ends, and returns its name. Extra config entries (e.g. max.message.bytes) are optional.
func CreateTopic(t testing.TB, bootstrap string, partitions int, config map[string]string) string {
	t.Helper()
	return CreateNamedTopic(t, bootstrap, testenv.UniqueName("test-"), partitions, config)
}

// CreateNamedTopic is CreateTopic for a name the caller chose (unique, as CreateTopic's
// are), for brokers that want a given prefix.
func CreateNamedTopic(t testing.TB, bootstrap, name string, partitions int, config map[string]string) string {
	t.Helper()
	a := Admin(t, bootstrap)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := a.CreateTopics(ctx, []kafka.TopicSpecification{{
		Topic: name, NumPartitions: partitions, ReplicationFactor: 1, Config: config,
	}}, kafka.SetAdminOperationTimeout(20*time.Second))
	if err != nil {
		t.Fatalf("create topic %s: %v", name, err)
	}
	if res[0].Error.Code() != kafka.ErrNoError {
		t.Fatalf("create topic %s: %v", name, res[0].Error)
	}
	waitForLeaders(t, a, name, partitions)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := a.DeleteTopics(ctx, []string{name}); err != nil {
			t.Logf("delete topic %s: %v", name, err)
		}
	})
	return name
}

// waitForLeaders returns once every partition of topic has a leader, so the first
// produce does not race the topic's creation.
func waitForLeaders(t testing.TB, a *kafka.AdminClient, topic string, partitions int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		md, err := a.GetMetadata(&topic, false, 5000)
		if err == nil {
			tm := md.Topics[topic]
			ok := tm.Error.Code() == kafka.ErrNoError && len(tm.Partitions) == partitions
			for _, p := range tm.Partitions {
				ok = ok && p.Leader >= 0 && p.Error.Code() == kafka.ErrNoError
			}
			if ok {
				return
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("topic %s has no leaders after 30 s", topic)
}

// RecreateTopic deletes topic, one CreateNamedTopic made, and creates it again under the
// same name, empty, with a new topic id: offsets start at 0 again. The deletion is
// asynchronous, so the creation is retried while the broker still knows the old topic.
func RecreateTopic(t testing.TB, bootstrap, name string, partitions int, config map[string]string) {
	t.Helper()
	a := Admin(t, bootstrap)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := a.DeleteTopics(ctx, []string{name}, kafka.SetAdminOperationTimeout(20*time.Second))
	if err != nil || res[0].Error.Code() != kafka.ErrNoError {
		t.Fatalf("delete topic %s: %v %v", name, err, res)
	}
	for {
		res, err := a.CreateTopics(ctx, []kafka.TopicSpecification{{
			Topic: name, NumPartitions: partitions, ReplicationFactor: 1, Config: config,
		}}, kafka.SetAdminOperationTimeout(20*time.Second))
		if err != nil {
			t.Fatalf("create topic %s again: %v", name, err)
		}
		if res[0].Error.Code() == kafka.ErrNoError {
			break
		}
		if res[0].Error.Code() != kafka.ErrTopicAlreadyExists || ctx.Err() != nil {
			t.Fatalf("create topic %s again: %v", name, res[0].Error)
		}
		time.Sleep(200 * time.Millisecond)
	}
	waitForLeaders(t, a, name, partitions)
}
