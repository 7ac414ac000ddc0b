package delivery

import (
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/dlqops/dlq/internal/headers"
	"github.com/dlqops/dlq/internal/kafkaclient"
	"github.com/dlqops/dlq/internal/kafkafast"
)

// ProducerConfig is the producer every delivery uses: kafkaclient's (acks=all,
// idempotence) that never creates a topic, whether by a metadata lookup or a produce.
// Its delivery reports carry the record's position and opaque only: copying each key and
// value back into Go was per-record work nobody reads (a retry builds its record again
// from the source).
func ProducerConfig(cfg kafkaclient.Config) kafka.ConfigMap {
	m := kafkaclient.ProducerConfig(cfg)
	m["allow.auto.create.topics"] = false
	m["go.delivery.report.fields"] = "none"
	return m
}

// Destination is where a record goes: a topic Topics says exists, and the partition it
// chose.
type Destination struct {
	Topic     string
	Partition int32
}

// Source is a record's content as read from the DLQ or stored in PostgreSQL: it leaves
// byte for byte, its foreign headers in order.
type Source[H headers.Shape] struct {
	Key, Value []byte
	Timestamp  time.Time
	Headers    []H
}

// Encoder builds outgoing messages, reusing its buffers from record to record. It is
// owned by one goroutine.
type Encoder struct {
	topic string
	msg   kafka.Message
	hdrs  []kafka.Header
	vals  headers.Scratch
}

// Produce hands p the record src to dest, its headers encoded from env for this hop with
// opts; the delivery report goes to reports (nil: p's events channel) with opaque.
// librdkafka copies the message, so the encoder keeps nothing of it.
func Produce[H headers.Shape](e *Encoder, p *kafka.Producer, reports chan kafka.Event, dest Destination,
	src Source[H], env headers.Envelope, opts headers.EncodeOptions, opaque any) error {
	e.hdrs = headers.AppendEncoded(e.hdrs[:0], &e.vals, src.Headers, env, opts)
	e.topic = dest.Topic // not dest's: a pointer to it would allocate per record
	e.msg = kafka.Message{TopicPartition: kafka.TopicPartition{Topic: &e.topic, Partition: dest.Partition},
		Key: src.Key, Value: src.Value, Timestamp: src.Timestamp, Headers: e.hdrs, Opaque: opaque}
	err := p.Produce(&e.msg, reports)
	e.msg = kafka.Message{} // holds no record until the next
	return err
}

// ProduceFast hands p the record src to dest as Produce does; its delivery report comes
// on p's Events with opaque.
func ProduceFast[H headers.Shape](e *Encoder, p *kafkafast.Producer, dest Destination,
	src Source[H], env headers.Envelope, opts headers.EncodeOptions, opaque any) error {
	e.hdrs = headers.AppendEncoded(e.hdrs[:0], &e.vals, src.Headers, env, opts)
	err := p.Produce(dest.Topic, dest.Partition, src.Key, src.Value, src.Timestamp, e.hdrs, opaque)
	clear(e.hdrs) // holds no record until the next
	return err
}
