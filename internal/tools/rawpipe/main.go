// Command rawpipe is the raw baseline of the dlq-worker benchmark: the least a process
// must do to move a DLQ backlog. It joins a consumer group on one topic and, once its
// partitions are assigned, reads each from its low to its high watermark of that moment,
// produces every record as it is to the same partition of another topic (acks=all,
// idempotent, the worker's client and queue settings), waits for every acknowledgement,
// commits and exits. It prints one JSON line: how long that took from the assignment to
// the commit, how many records it moved and its peak resident memory.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/dlqops/dlq/internal/kafkaclient"
	"github.com/dlqops/dlq/internal/procstat"
	"github.com/dlqops/dlq/internal/routes"
)

// result is what rawpipe prints.
type result struct {
	ElapsedMs float64 `json:"elapsed_ms"`
	Records   int64   `json:"records"`
	PeakMiB   float64 `json:"peak_mib"`
}

func main() {
	bootstrap := flag.String("bootstrap", "127.0.0.1:59092", "Kafka bootstrap servers")
	group := flag.String("group", "", "consumer group")
	from := flag.String("from", "", "topic to read")
	to := flag.String("to", "", "topic to produce to, partition for partition")
	inFlight := flag.Int("in-flight", routes.DefaultMaxInFlight, "queue sizes as a route with this max_in_flight")
	flag.Parse()
	res, err := pipe(kafkaclient.Config{BootstrapServers: *bootstrap}, *group, *from, *to, *inFlight)
	if err != nil {
		fmt.Fprintln(os.Stderr, "rawpipe:", err)
		os.Exit(1)
	}
	if err := json.NewEncoder(os.Stdout).Encode(res); err != nil {
		os.Exit(1)
	}
}

func pipe(kc kafkaclient.Config, group, from, to string, inFlight int) (result, error) {
	cc := kafkaclient.ConsumerConfig(kc, group)
	pc := kafkaclient.ProducerConfig(kc)
	pc["go.delivery.report.fields"] = "none"
	kafkaclient.PipeQueues(cc, pc, inFlight)
	c, err := kafka.NewConsumer(&cc)
	if err != nil {
		return result{}, err
	}
	defer c.Close()
	p, err := kafka.NewProducer(&pc)
	if err != nil {
		return result{}, err
	}
	defer p.Close()
	// On assignment: the watermarks of every partition, then reading from the low ones
	// (an absolute offset starts fetching at once, where the earliest reset would wait for
	// librdkafka's offset-query timer first).
	var start time.Time
	var werr error
	hw := map[int32]int64{}
	var total int64
	if err := c.Subscribe(from, func(c *kafka.Consumer, ev kafka.Event) error {
		a, ok := ev.(kafka.AssignedPartitions)
		if !ok || !start.IsZero() {
			return nil
		}
		start = time.Now()
		tps := make([]kafka.TopicPartition, len(a.Partitions))
		for i, tp := range a.Partitions {
			low, high, err := c.QueryWatermarkOffsets(from, tp.Partition, 10_000)
			if err != nil {
				werr = err
			}
			if high > low {
				hw[tp.Partition] = high
				total += high - low
			}
			tps[i] = kafka.TopicPartition{Topic: &from, Partition: tp.Partition, Offset: kafka.Offset(low)}
		}
		return c.Assign(tps)
	}); err != nil {
		return result{}, err
	}
	for start.IsZero() {
		if err := fatal(c.Poll(100)); err != nil {
			return result{}, err
		}
	}
	if werr != nil {
		return result{}, werr
	}
	acked := make(chan error, 1)
	go func() { acked <- acknowledge(p, total) }()
	left := len(hw)
	for left > 0 {
		ev := c.Poll(100)
		m, ok := ev.(*kafka.Message)
		if !ok {
			if err := fatal(ev); err != nil {
				return result{}, err
			}
			continue
		}
		part := m.TopicPartition.Partition
		if int64(m.TopicPartition.Offset)+1 == hw[part] {
			left--
		}
		m.TopicPartition = kafka.TopicPartition{Topic: &to, Partition: part}
		for {
			err := p.Produce(m, nil)
			if err == nil {
				break
			}
			if ke, ok := err.(kafka.Error); !ok || ke.Code() != kafka.ErrQueueFull {
				return result{}, err
			}
			time.Sleep(time.Millisecond) // librdkafka drains its queue meanwhile
		}
	}
	if err := <-acked; err != nil {
		return result{}, err
	}
	commit := make([]kafka.TopicPartition, 0, len(hw))
	for part, high := range hw {
		commit = append(commit, kafka.TopicPartition{Topic: &from, Partition: part, Offset: kafka.Offset(high)})
	}
	if _, err := c.CommitOffsets(commit); err != nil {
		return result{}, err
	}
	elapsed := time.Since(start)
	peak, err := procstat.PeakRSSMiB(os.Getpid())
	return result{ElapsedMs: float64(elapsed.Microseconds()) / 1000, Records: total, PeakMiB: peak}, err
}

// acknowledge waits for n successful acknowledgements.
func acknowledge(p *kafka.Producer, n int64) error {
	for n > 0 {
		switch ev := (<-p.Events()).(type) {
		case *kafka.Message:
			if ev.TopicPartition.Error != nil {
				return ev.TopicPartition.Error
			}
			n--
		case kafka.Error:
			if ev.IsFatal() {
				return ev
			}
		}
	}
	return nil
}

func fatal(ev kafka.Event) error {
	if ke, ok := ev.(kafka.Error); ok && ke.IsFatal() {
		return ke
	}
	return nil
}
