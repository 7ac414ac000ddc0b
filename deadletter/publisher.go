// Package deadletter is what a service uses to dead-letter correctly: a Publisher that
// sends a failed record to its DLQ topic with the orchestrator's headers and waits for the
// broker's acknowledgement, and a Consumer that stores an offset only once its record
// was handled or safely dead-lettered — never past a record that was neither.
package deadletter

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/dlqops/dlq/internal/headers"
)

// PublisherConfig configures a Publisher.
type PublisherConfig struct {
	// BootstrapServers of the cluster holding the DLQ topic.
	BootstrapServers string
	// Topic is the dead-letter topic. It must exist: New fails otherwise, so a typo is
	// found at start-up rather than on the first failure.
	Topic string
	// Kafka holds further librdkafka properties (security, SASL, ...). acks and
	// enable.idempotence are always forced to all and true.
	Kafka kafka.ConfigMap
	// Now is the clock; time.Now when nil.
	Now func() time.Time
	// Group is the consumer group whose failures this publisher sends, written in
	// dlq-consumer-group so that a route with redrive_to group_topic or group_header
	// redrives them to that group alone. A Consumer's own group is written when empty.
	Group string
}

// Publisher sends failed records to a DLQ topic, synchronously confirmed.
type Publisher struct {
	producer *kafka.Producer
	topic    string
	group    string
	now      func() time.Time
	done     chan struct{}
}

// ErrorClasser lets an error name its own class (for example "timeout" or
// "validation"); other errors are classed by their Go type.
type ErrorClasser interface {
	ErrorClass() string
}

// NewPublisher connects, checks that the DLQ topic exists and returns a Publisher.
func NewPublisher(cfg PublisherConfig) (*Publisher, error) {
	if cfg.Topic == "" {
		return nil, errors.New("deadletter: PublisherConfig.Topic is required")
	}
	cm := kafka.ConfigMap{}
	for k, v := range cfg.Kafka {
		cm[k] = v
	}
	cm["bootstrap.servers"] = cfg.BootstrapServers
	// Seeds 001/004: a DLQ write the broker may lose is no DLQ at all.
	cm["acks"] = "all"
	cm["enable.idempotence"] = true
	if _, ok := cm["message.timeout.ms"]; !ok {
		cm["message.timeout.ms"] = 30000
	}
	p, err := kafka.NewProducer(&cm)
	if err != nil {
		return nil, fmt.Errorf("deadletter: producer: %w", err)
	}
	md, err := p.GetMetadata(&cfg.Topic, false, 10000)
	if err == nil && md.Topics[cfg.Topic].Error.Code() != kafka.ErrNoError {
		err = md.Topics[cfg.Topic].Error
	}
	if err != nil {
		p.Close()
		return nil, fmt.Errorf("deadletter: DLQ topic %q: %w", cfg.Topic, err)
	}
	pub := &Publisher{producer: p, topic: cfg.Topic, group: cfg.Group, now: cfg.Now, done: make(chan struct{})}
	if pub.now == nil {
		pub.now = time.Now
	}
	go pub.drainEvents()
	return pub, nil
}

// drainEvents consumes the producer's event channel (errors, stats) so it never fills.
func (p *Publisher) drainEvents() {
	defer close(p.done)
	for range p.producer.Events() {
	}
}

// Topic is the DLQ topic.
func (p *Publisher) Topic() string { return p.topic }

// Publish sends failed, which the caller could not process because of cause, to the DLQ
// topic and returns where the broker stored it. Key, value, timestamp and every header are
// kept; the orchestrator's headers carry the original coordinates (those of the first
// failure when failed was itself redriven), the retry count and first-failure time carried
// forward from failed's headers, the last-failure time, and the error's class and
// (truncated) message, whether cause was marked Permanent, and the failing consumer
// group (PublisherConfig.Group). When Publish returns an error the record may or may not be in the
// DLQ: the caller must not commit failed's offset, and will publish again.
func (p *Publisher) Publish(ctx context.Context, failed *kafka.Message, cause error) (kafka.TopicPartition, error) {
	return p.publish(ctx, failed, cause, p.group)
}

// publish is Publish naming group ("" keeps the group the headers name) as the one that
// failed the record.
func (p *Publisher) publish(ctx context.Context, failed *kafka.Message, cause error, group string) (kafka.TopicPartition, error) {
	in := headers.From(failed.Headers)
	env := headers.Decode(in).Envelope
	now := p.now()
	if env.OriginalTopic == "" || !headers.ValidTopicName(env.OriginalTopic) {
		env.OriginalTopic = *failed.TopicPartition.Topic
		env.OriginalPartition = failed.TopicPartition.Partition
		env.OriginalOffset = int64(failed.TopicPartition.Offset)
		env.OriginalTimestamp = failed.Timestamp
	}
	if env.FirstFailure.IsZero() {
		env.FirstFailure = now
	}
	env.LastFailure = now
	env.ErrorClass, env.ErrorMessage = classify(cause)
	env.Permanent = IsPermanent(cause)
	if group != "" {
		env.Group = group
	}
	env.TargetGroup = "" // the address was the redrive's; a dead letter is for the worker
	out := headers.Encode(in, env, headers.EncodeOptions{})
	msg := &kafka.Message{
		TopicPartition: kafka.TopicPartition{Topic: &p.topic, Partition: kafka.PartitionAny},
		Key:            failed.Key,
		Value:          failed.Value,
		Timestamp:      failed.Timestamp,
		Headers:        headers.To[kafka.Header](out),
	}
	delivered := make(chan kafka.Event, 1)
	if err := p.producer.Produce(msg, delivered); err != nil {
		return kafka.TopicPartition{}, fmt.Errorf("deadletter: publish to %s: %w", p.topic, err)
	}
	select {
	case ev := <-delivered:
		m, ok := ev.(*kafka.Message)
		if !ok {
			return kafka.TopicPartition{}, fmt.Errorf("deadletter: publish to %s: unexpected event %v", p.topic, ev)
		}
		if m.TopicPartition.Error != nil {
			return kafka.TopicPartition{}, fmt.Errorf("deadletter: publish to %s: %w", p.topic, m.TopicPartition.Error)
		}
		return m.TopicPartition, nil
	case <-ctx.Done():
		return kafka.TopicPartition{}, fmt.Errorf("deadletter: publish to %s: %w", p.topic, ctx.Err())
	}
}

// Close waits up to timeout for records still in flight, then closes the producer.
func (p *Publisher) Close(timeout time.Duration) {
	p.producer.Flush(int(timeout.Milliseconds()))
	p.producer.Close()
	<-p.done
}

func classify(err error) (class, message string) {
	if err == nil {
		return "unknown", ""
	}
	var c ErrorClasser
	if errors.As(err, &c) {
		return c.ErrorClass(), err.Error()
	}
	// The permanent mark is not a class: the error it marks names it.
	for p, ok := err.(*permanentError); ok; p, ok = err.(*permanentError) {
		err = p.err
	}
	return fmt.Sprintf("%T", err), err.Error()
}
