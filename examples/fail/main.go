// Command fail makes records fail right now, for a first look at the loop on the stack of
// `make dev` (`make fail`). It dead-letters orders to orders.dlq through the deadletter
// package as a service would, in three kinds:
//
//   - failed once (retry count 0): the worker schedules them with backoff, then redrives
//     them to orders;
//   - failed five times (retry count 5 = the example route's max_retries): parked
//     "exhausted" at the next run;
//   - written by hand without any original topic: parked "unroutable".
//
// Then it prints what to run to watch them and replay the parked ones.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/dlqops/dlq/deadletter"
	"github.com/dlqops/dlq/internal/headers"
)

// kinds is how many records of each kind one run dead-letters.
type kinds struct{ retrying, exhausted, unroutable int }

func main() {
	var k kinds
	bootstrap := flag.String("bootstrap", os.Getenv("KAFKA_BOOTSTRAP_SERVERS"), "Kafka bootstrap servers")
	topic := flag.String("topic", "orders", "the topic the orders failed on")
	dlq := flag.String("dlq", "orders.dlq", "the dead-letter topic")
	flag.IntVar(&k.retrying, "retrying", 5, "orders that failed once")
	flag.IntVar(&k.exhausted, "exhausted", 3, "orders that failed max_retries times")
	flag.IntVar(&k.unroutable, "unroutable", 2, "records without an original topic")
	admin := flag.String("admin", "http://127.0.0.1:8080", "the URL of make dev's dlq-admin, for the commands printed")
	workerLog := flag.String("worker-log", ".cache/dev/dlq-worker.log", "the log of make dev's dlq-worker, for the text printed")
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := run(ctx, *bootstrap, *topic, *dlq, k); err != nil {
		fmt.Fprintln(os.Stderr, "fail:", err)
		os.Exit(1)
	}
	printNextSteps(os.Stdout, *dlq, k, *admin, *workerLog)
}

// printNextSteps says what was dead-lettered and what to run next against the admin API at
// adminURL, with the worker logging to workerLog.
func printNextSteps(w io.Writer, dlq string, k kinds, adminURL, workerLog string) {
	fmt.Fprintf(w, `Dead-lettered to %[1]s: %[2]d orders that failed once, %[3]d that failed %[4]d times, %[5]d without an original topic.

Watch the worker of `+"`make dev`"+` handle them (it runs every 30 s; logs in %[6]s):
  export DLQ_ADMIN_URL=%[7]s DLQ_ADMIN_TOKEN=dev-admin-token
  bin/dlq-admin stats                       # scheduled (backoff), then redriven; parked exhausted/unroutable
  bin/dlq-admin list --status parked
  bin/dlq-admin runs --route orders         # what each run read and did, per partition
Then fix and replay the parked ones:
  bin/dlq-admin replay ID --wait                           # one, to its original topic
  bin/dlq-admin bulk replay --park-reason unroutable --to orders --yes   # the rest, with a progress bar
`, dlq, k.retrying, k.exhausted, retriesExhausted, k.unroutable, workerLog, adminURL)
}

// retriesExhausted is config/worker.example.yaml's max_retries.
const retriesExhausted = 5

// errDownstream is what the orders failed with.
type errDownstream struct{ class string }

func (e errDownstream) Error() string      { return "payment service answered 503" }
func (e errDownstream) ErrorClass() string { return e.class }

func run(ctx context.Context, bootstrap, topic, dlq string, k kinds) error {
	if bootstrap == "" {
		return errors.New("no Kafka: run `make dev` first (make fail sets KAFKA_BOOTSTRAP_SERVERS)")
	}
	pub, err := deadletter.NewPublisher(deadletter.PublisherConfig{BootstrapServers: bootstrap, Topic: dlq})
	if err != nil {
		return err
	}
	defer pub.Close(10 * time.Second)
	for i := range k.retrying + k.exhausted {
		order := &kafka.Message{
			TopicPartition: kafka.TopicPartition{Topic: &topic, Partition: int32(i % 3), Offset: kafka.Offset(i)},
			Key:            []byte("order-" + strconv.Itoa(i)), Value: []byte(fmt.Sprintf(`{"order":%d,"amount":%d}`, i, 10+i)),
			Timestamp: time.Now(),
		}
		if i >= k.retrying { // it has been redriven and failed again max_retries times
			order.Headers = []kafka.Header{{Key: headers.KeyRetryCount, Value: []byte(strconv.Itoa(retriesExhausted))}}
		}
		if _, err := pub.Publish(ctx, order, errDownstream{class: "PaymentUnavailable"}); err != nil {
			return err
		}
	}
	return produceRaw(ctx, bootstrap, dlq, k.unroutable)
}

// produceRaw writes records with no header at all, as a hand-rolled DLQ writer might.
func produceRaw(ctx context.Context, bootstrap, dlq string, n int) error {
	p, err := kafka.NewProducer(&kafka.ConfigMap{"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": true})
	if err != nil {
		return err
	}
	defer p.Close()
	delivered := make(chan kafka.Event, n)
	for i := range n {
		if err := p.Produce(&kafka.Message{
			TopicPartition: kafka.TopicPartition{Topic: &dlq, Partition: kafka.PartitionAny},
			Value:          []byte(fmt.Sprintf(`{"orphan":%d}`, i)),
		}, delivered); err != nil {
			return err
		}
	}
	for range n {
		select {
		case ev := <-delivered:
			if m, ok := ev.(*kafka.Message); ok && m.TopicPartition.Error != nil {
				return m.TopicPartition.Error
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}
