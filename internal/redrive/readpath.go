package redrive

import (
	"errors"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/dlqops/dlq/internal/delivery"
	"github.com/dlqops/dlq/internal/headers"
	"github.com/dlqops/dlq/internal/kafkafast"
)

// The read paths of Options.ReadPath (the worker's read_path).
const (
	ReadPathQueue = "queue"
	ReadPathPoll  = "poll"
)

// produceFunc produces a redriven record; its delivery report comes with opaque on the
// producer's Events or on redriveReports. It is the sender goroutine's.
type produceFunc func(dest delivery.Destination, src delivery.Source[kafka.Header], env headers.Envelope,
	opts headers.EncodeOptions, opaque any) error

// clients are the route's Kafka handles, opened by newWorker (readpath.go: which of them
// the read path uses) and closed by the loop's shutdown. The consumer and records are
// the loop goroutine's; the producer is the loop's, the claims' and, on read_path poll,
// the sender's; fast is the sender's on read_path queue, its reports read by the loop.
type clients struct {
	consumer *kafka.Consumer     // events (rebalances, errors, commit results)
	records  *kafkafast.Queue    // the consumer's records (partitions routes them at each resume); nil: Poll hands them out
	producer *kafka.Producer     // Ready asks it for metadata
	fast     *kafkafast.Producer // nil on read_path poll
	tx       *kafka.Producer     // transactional, the sender's on delivery exactly_once (txn.go); else nil
}

// openReadPath sets up how the route's records go through librdkafka (read_path) and
// returns how the sender produces them. On queue, routed partitions hand their records
// to a kafkafast.Queue of the consumer's and the redrives go through a kafkafast.Producer
// of the route's own, one call into librdkafka per record each way. On poll, the
// consumer's Poll hands out the records and the route's producer's Produce sends the
// redrives: confluent-kafka-go's public API only. queue falls back to poll, loudly, when
// kafkafast refuses the confluent-kafka-go or librdkafka the binary links.
func (w *worker) openReadPath(path string, pc kafka.ConfigMap) (produceFunc, error) {
	var enc delivery.Encoder
	if path == ReadPathQueue {
		err := w.openFastPath(pc)
		if err == nil {
			w.log.Info().Str("read_path", path).Msg("records are read and redriven through kafkafast")
			w.metrics.readPath.WithLabelValues(w.route.Name, ReadPathQueue).Set(1)
			return func(dest delivery.Destination, src delivery.Source[kafka.Header], env headers.Envelope, opts headers.EncodeOptions, opaque any) error {
				return delivery.ProduceFast(&enc, w.fast, dest, src, env, opts, opaque)
			}, nil
		}
		if !errors.Is(err, kafkafast.ErrUnchecked) {
			return nil, err
		}
		w.log.Warn().Err(err).Str("read_path", ReadPathPoll).
			Msg("read_path queue is not available with this build: the route reads and produces through confluent-kafka-go's public API")
	} else {
		w.log.Info().Str("read_path", path).Msg("records are read and redriven through confluent-kafka-go's public API")
	}
	w.metrics.readPath.WithLabelValues(w.route.Name, ReadPathPoll).Set(1)
	return func(dest delivery.Destination, src delivery.Source[kafka.Header], env headers.Envelope, opts headers.EncodeOptions, opaque any) error {
		return delivery.Produce(&enc, w.producer, nil, dest, src, env, opts, opaque)
	}, nil
}

// openFastPath opens the queue path's Queue and Producer.
func (w *clients) openFastPath(pc kafka.ConfigMap) error {
	q, err := kafkafast.NewQueue(w.consumer)
	if err != nil {
		return err
	}
	p, err := kafkafast.NewProducer(pc)
	if err != nil {
		q.Close()
		return err
	}
	w.records, w.fast = q, p
	return nil
}

// redriveReports is where the redrives' delivery reports come on the queue path and on
// delivery exactly_once; nil (a channel never ready) on the poll path, where they come
// on the producer's Events.
func (w *clients) redriveReports() chan kafka.Event {
	switch {
	case w.tx != nil:
		return w.tx.Events()
	case w.fast != nil:
		return w.fast.Events()
	}
	return nil
}

// closeClients closes the clients newWorker opened, for a worker whose loop never
// started: the queue before its consumer.
func (w *clients) closeClients() {
	if w.records != nil {
		w.records.Close()
	}
	w.consumer.Close()
	if w.fast != nil {
		w.fast.Close()
	}
	if w.tx != nil {
		w.tx.Close()
	}
	w.producer.Close()
}
