// Package kafkaclient builds confluent-kafka-go handles from our configuration with the
// settings that keep records safe (seeds 001–004), so no caller forgets one.
package kafkaclient

import (
	"context"
	"fmt"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
)

// base is the connection part every handle shares, with the properties of kafka.extra
// and then those of one kind of client (kafka.consumer, kafka.producer), which may
// override it.
func base(cfg Config, kind map[string]string) kafka.ConfigMap {
	m := kafka.ConfigMap{"bootstrap.servers": cfg.BootstrapServers}
	for k, v := range cfg.Extra {
		m[k] = v
	}
	for k, v := range kind {
		m[k] = v
	}
	return m
}

// ProducerConfig is a producer that loses nothing it confirmed: acks=all, idempotence
// (which also keeps per-partition order across retries).
func ProducerConfig(cfg Config) kafka.ConfigMap {
	m := base(cfg, cfg.Producer)
	m["acks"] = "all"
	m["enable.idempotence"] = true
	// confluent-kafka-go allocates its channels up front, 1,000,000 slots each by default:
	// 24 MB of pointer buffers per producer that the garbage collector counts as live heap
	// (its target grows by twice that) and scans on every cycle. Nothing here uses
	// ProduceChannel, and librdkafka never holds more delivery reports than messages in its
	// queue (queue.buffering.max.messages, 100,000 by default).
	m["go.produce.channel.size"] = 0
	m["go.events.channel.size"] = producerQueueDefault
	return withLogs(m)
}

// producerQueueDefault is librdkafka's default queue.buffering.max.messages.
const producerQueueDefault = 100_000

// ConsumerConfig is a consumer that commits only what its caller stored: no auto offset
// store, earliest reset: a group without a committed offset never skips what nobody
// handled.
func ConsumerConfig(cfg Config, group string) kafka.ConfigMap {
	m := base(cfg, cfg.Consumer)
	m["group.id"] = group
	m["enable.auto.offset.store"] = false
	m["auto.offset.reset"] = "earliest"
	m["enable.partition.eof"] = false
	// When the read-ahead queue fills, librdkafka (≥ 2.4) waits this long before fetching
	// again; its 1 s default stalls a consumer that drains bursts, as the worker does.
	m["fetch.queue.backoff.ms"] = 10
	return withLogs(m)
}

// PipeQueues sizes librdkafka's queues for a consume→produce pipe that keeps at most
// inFlight records unacknowledged: the redrive worker, and the raw pipe it is benchmarked
// against, so that both sides read ahead and buffer alike.
func PipeQueues(consumer, producer kafka.ConfigMap, inFlight int) {
	// 4 MiB of read-ahead is thousands of records, enough to keep a loopback or LAN pipe
	// busy; more of it, and the fetch buffers it pins, would be a large share of the
	// worker's peak RSS.
	consumer["queued.max.messages.kbytes"] = 4096
	// Acknowledgements never outnumber the records in flight; the 1,000,000 default is a
	// 16 MB buffer of pointers the garbage collector scans on every cycle.
	producer["go.events.channel.size"] = max(inFlight*2, 1000)
	producer["queue.buffering.max.messages"] = max(inFlight*2, 1000)
}

// Admin is an admin client whose librdkafka log lines go through the running LogRouter
// like every other handle's. confluent-kafka-go's NewAdminClient takes no log channel
// (its lines would reach stderr as raw "%3|…|FAIL|…" text), so the client is derived
// from a producer of its own that does.
type Admin struct {
	*kafka.AdminClient
	producer *kafka.Producer
}

// NewAdmin returns an admin client on the connection properties (kafka.extra).
func NewAdmin(cfg Config) (*Admin, error) {
	m := withLogs(base(cfg, nil))
	m["go.produce.channel.size"], m["go.events.channel.size"] = 0, 100
	p, err := kafka.NewProducer(&m)
	if err != nil {
		return nil, err
	}
	a, err := kafka.NewAdminClientFromProducer(p)
	if err != nil {
		p.Close()
		return nil, err
	}
	// Nothing is produced: the events are client errors (all brokers down, ...), which
	// librdkafka logs as well. Close ends the channel, and this reader with it.
	go func() {
		for range p.Events() {
		}
	}()
	return &Admin{AdminClient: a, producer: p}, nil
}

// Close closes the admin client and its producer.
func (a *Admin) Close() {
	a.AdminClient.Close()
	a.producer.Close()
}

// MetadataCheck is a readiness check: the cluster answers a metadata request.
func MetadataCheck(a *kafka.AdminClient) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		timeout := 2 * time.Second
		if dl, ok := ctx.Deadline(); ok {
			timeout = time.Until(dl)
		}
		md, err := a.GetMetadata(nil, false, int(timeout.Milliseconds()))
		if err != nil {
			return fmt.Errorf("kafka metadata: %w", err)
		}
		if len(md.Brokers) == 0 {
			return fmt.Errorf("kafka metadata: no brokers")
		}
		return nil
	}
}
