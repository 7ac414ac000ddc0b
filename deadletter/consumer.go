package deadletter

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/dlqops/dlq/internal/backoff"
)

// Handler processes one record. A nil error means done; any error sends the record to
// the DLQ.
type Handler func(ctx context.Context, m *kafka.Message) error

// ConsumerConfig configures a Consumer.
type ConsumerConfig struct {
	BootstrapServers string
	Group            string
	Topics           []string
	// Kafka holds further librdkafka properties. enable.auto.offset.store is always
	// forced to false: an offset is stored only by this package, after the record was
	// handled or dead-lettered.
	Kafka kafka.ConfigMap
	// PublishTimeout bounds one DLQ publish attempt (default 30 s).
	PublishTimeout time.Duration
	// RetryBackoff is the wait after a failed DLQ publish before the record is handled
	// again (default 1 s, doubling up to 30 s).
	RetryBackoff time.Duration
	Log          zerolog.Logger
	// Registerer, when set, receives the dlq_consumer_records_total counter, by
	// outcome: handled, dead_lettered, publish_failed, skipped_other_group.
	Registerer prometheus.Registerer
	// GroupTopicTemplate names this group's own redrive topic of each of Topics, as the
	// worker's route does (group_topic_template; default {topic}.redrive.{group}). The
	// consumer reads those topics too, so that a route with redrive_to group_topic
	// reaches this group alone.
	GroupTopicTemplate string
	// NoGroupTopics leaves the group's redrive topics out of the subscription.
	NoGroupTopics bool
}

// Consumer consumes topics, hands each record to a Handler and dead-letters the records
// the handler fails on. Its committed offsets never pass a record that was neither
// handled nor acknowledged by the DLQ: catching the error, moving on and committing a
// newer offset would lose the failed record.
type Consumer struct {
	c       *kafka.Consumer
	pub     *Publisher
	handle  Handler
	cfg     ConsumerConfig
	log     zerolog.Logger
	retry   backoff.Policy
	failed  int // consecutive failed publishes, for the retry backoff
	records *prometheus.CounterVec
}

// retryPolicy is the wait after failed publishes: base doubling up to 30 s (or base when
// it is longer), the engine's one backoff.
func retryPolicy(base time.Duration) backoff.Policy {
	return backoff.Policy{Base: base, Factor: 2, Cap: max(30*time.Second, base)}
}

// NewConsumer subscribes to cfg.Topics; records the handler fails on go to pub.
func NewConsumer(cfg ConsumerConfig, pub *Publisher, h Handler) (*Consumer, error) {
	if cfg.Group == "" || len(cfg.Topics) == 0 {
		return nil, errors.New("deadletter: ConsumerConfig needs Group and Topics")
	}
	if cfg.PublishTimeout <= 0 {
		cfg.PublishTimeout = 30 * time.Second
	}
	if cfg.RetryBackoff <= 0 {
		cfg.RetryBackoff = time.Second
	}
	if cfg.GroupTopicTemplate == "" {
		cfg.GroupTopicTemplate = DefaultGroupTopicTemplate
	}
	cm := kafka.ConfigMap{}
	for k, v := range cfg.Kafka {
		cm[k] = v
	}
	cm["bootstrap.servers"] = cfg.BootstrapServers
	cm["group.id"] = cfg.Group
	// Auto commit only commits what was stored, and it also commits on revoke and close.
	cm["enable.auto.offset.store"] = false
	if _, ok := cm["auto.offset.reset"]; !ok {
		cm["auto.offset.reset"] = "earliest"
	}
	c, err := kafka.NewConsumer(&cm)
	if err != nil {
		return nil, fmt.Errorf("deadletter: consumer: %w", err)
	}
	if err := c.SubscribeTopics(subscriptions(cfg.Topics, cfg.Group, cfg.GroupTopicTemplate, !cfg.NoGroupTopics), nil); err != nil {
		c.Close()
		return nil, fmt.Errorf("deadletter: subscribe: %w", err)
	}
	records := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "dlq_consumer_records_total",
		Help: "Records the dead-lettering consumer finished with, by outcome.",
	}, []string{"outcome"})
	if cfg.Registerer != nil {
		if err := cfg.Registerer.Register(records); err != nil {
			c.Close()
			return nil, fmt.Errorf("deadletter: metrics: %w", err)
		}
	}
	return &Consumer{c: c, pub: pub, handle: h, cfg: cfg, records: records, retry: retryPolicy(cfg.RetryBackoff),
		log: cfg.Log.With().Str("component", "deadletter").Logger()}, nil
}

// Run consumes until ctx ends, then closes the consumer, committing what was stored.
func (c *Consumer) Run(ctx context.Context) error {
	defer c.c.Close()
	for ctx.Err() == nil {
		ev := c.c.Poll(100)
		switch e := ev.(type) {
		case *kafka.Message:
			c.process(ctx, e)
		case kafka.Error:
			if e.IsFatal() {
				return fmt.Errorf("deadletter: consumer: %w", e)
			}
			c.log.Warn().Err(e).Msg("consumer error")
		}
	}
	return nil
}

// process handles m and stores its offset, or rewinds to it when it could be neither
// handled nor dead-lettered, so it is handled again after a backoff. A redrive addressed
// to another group is not handled: its offset is stored as it is.
func (c *Consumer) process(ctx context.Context, m *kafka.Message) {
	if addressedElsewhere(m, c.cfg.Group) {
		c.records.WithLabelValues(outcomeOtherGroup).Inc()
		c.store(m)
		return
	}
	herr := c.handle(ctx, m)
	outcome := "handled"
	if herr != nil {
		outcome = "dead_lettered"
		group := c.pub.group
		if group == "" {
			group = c.cfg.Group
		}
		pctx, cancel := context.WithTimeout(ctx, c.cfg.PublishTimeout)
		at, err := c.pub.publish(pctx, m, herr, group)
		cancel()
		if err != nil {
			c.records.WithLabelValues("publish_failed").Inc()
			c.rewind(ctx, m, err)
			return
		}
		c.log.Info().Str("topic", *m.TopicPartition.Topic).Int32("partition", m.TopicPartition.Partition).
			Int64("offset", int64(m.TopicPartition.Offset)).Str("dlq_topic", c.pub.Topic()).
			Int64("dlq_offset", int64(at.Offset)).AnErr("cause", herr).Msg("dead-lettered")
	}
	c.records.WithLabelValues(outcome).Inc()
	c.failed = 0
	c.store(m)
}

// store stores m's offset: auto commit commits it.
func (c *Consumer) store(m *kafka.Message) {
	if _, err := c.c.StoreMessage(m); err != nil {
		// The partition was revoked meanwhile: its new owner starts from the last
		// commit, at or before this record.
		c.log.Warn().Err(err).Str("topic", *m.TopicPartition.Topic).Int32("partition", m.TopicPartition.Partition).
			Int64("offset", int64(m.TopicPartition.Offset)).Msg("offset not stored")
	}
}

func (c *Consumer) rewind(ctx context.Context, m *kafka.Message, cause error) {
	wait := c.retry.Delay(c.failed, 0.5)
	c.failed++
	c.log.Error().Err(cause).Str("topic", *m.TopicPartition.Topic).Int32("partition", m.TopicPartition.Partition).
		Int64("offset", int64(m.TopicPartition.Offset)).Dur("backoff_ms", wait).
		Msg("dead-letter publish failed; the record will be handled again")
	if err := c.c.Seek(m.TopicPartition, 0); err != nil {
		c.log.Warn().Err(err).Msg("seek back failed (partition revoked?); its next owner resumes from the last commit")
	}
	select {
	case <-ctx.Done():
	case <-time.After(wait):
	}
}
