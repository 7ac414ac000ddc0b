package redrive

import (
	"context"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/dlqops/dlq/internal/delivery"
	"github.com/dlqops/dlq/internal/headers"
	"github.com/dlqops/dlq/internal/lifecycle"
)

// sendJob is a redriven record for the sender: env is its envelope as read, now the
// time of its hop.
type sendJob struct {
	o   *inflight
	env headers.Envelope
	now time.Time
}

// sendFailure is a record Produce refused; the loop decides what to do with it.
type sendFailure struct {
	o   *inflight
	err error
}

// sender encodes and produces redriven records on a goroutine of its own, so that the
// loop's polling and classifying overlap with the encoding and librdkafka's copy of each
// record instead of waiting for them. It touches nothing of the loop's state: a job's
// partition key and source record do not change, and a refusal goes back to the loop.
type sender struct {
	produce produceFunc // the read path's (readpath.go)
	opts    headers.EncodeOptions
	in      chan []sendJob
	free    chan []sendJob // batches the goroutine produced, emptied, for queue to fill again
	failed  chan sendFailure
	life    lifecycle.Base // the goroutine, from Start to Stop

	queued []sendJob // the loop's: redriven records not handed to the goroutine yet
}

// senderBatches is how many batches of jobs may wait for the sender.
const senderBatches = 4

func newSender(produce produceFunc, opts headers.EncodeOptions) *sender {
	return &sender{produce: produce, opts: opts, in: make(chan []sendJob, senderBatches),
		free: make(chan []sendJob, senderBatches+1), failed: make(chan sendFailure, 64)}
}

// Start starts the goroutine; its work ends with ctx too.
func (s *sender) Start(ctx context.Context) error {
	if _, err := s.life.Start(ctx); err != nil {
		return err
	}
	s.life.Go(s.run)
	return nil
}

// Stop stops the goroutine; jobs it has not produced yet are abandoned (their records
// stay uncommitted in the DLQ). The loop stops it before it closes the producer, once it
// no longer reads failed.
func (s *sender) Stop(ctx context.Context) error { return s.life.Stop(ctx) }

// queue adds j to the records the loop hands over at the end of its turn (flush), in a
// batch the goroutine handed back when there is one: a turn's batch is tens of KiB.
func (s *sender) queue(j sendJob) {
	if s.queued == nil {
		select {
		case s.queued = <-s.free:
		default:
		}
	}
	s.queued = append(s.queued, j)
}

// flush hands the queued records to the goroutine unless it is still busy with earlier
// ones; they wait for the next turn then. It runs on the loop.
func (s *sender) flush() {
	select {
	case s.input() <- s.queued:
		s.handed()
	default:
	}
}

// input is the goroutine's input when records are queued, else nil (a select case that
// is never ready), for the loop's waits; handed says the queue was sent on it.
func (s *sender) input() chan<- []sendJob {
	if len(s.queued) == 0 {
		return nil
	}
	return s.in
}

func (s *sender) handed() { s.queued = nil }

func (s *sender) run(ctx context.Context) {
	for {
		var jobs []sendJob
		select {
		case <-ctx.Done():
			return
		case jobs = <-s.in:
		}
		for i := range jobs {
			if ctx.Err() != nil {
				return
			}
			// By reference: a job is mostly its envelope, a few hundred bytes to copy.
			if err := s.send(&jobs[i]); err != nil {
				select {
				case s.failed <- sendFailure{o: jobs[i].o, err: err}:
				case <-ctx.Done():
					return
				}
			}
		}
		clear(jobs) // holds no record for the garbage collector
		select {
		case s.free <- jobs[:0]:
		default:
		}
	}
}

// send produces j's record to its target, its headers encoded for the next hop.
func (s *sender) send(j *sendJob) error {
	o := j.o
	from := headers.Coordinates{Topic: o.part.key.topic, Partition: o.part.key.partition, Offset: int64(o.src.TopicPartition.Offset)}
	env := j.env.DeadLetteredAt(o.src.Timestamp).Redriven(from, j.now)
	env.TargetGroup = o.group
	return s.produce(delivery.Destination{Topic: o.topic, Partition: o.target},
		delivery.Source[kafka.Header]{Key: o.src.Key, Value: o.src.Value, Timestamp: o.src.Timestamp, Headers: o.src.Headers},
		env, s.opts, o)
}
