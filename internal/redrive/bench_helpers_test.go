package redrive_test

import (
	"bytes"
	"context"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/dlqops/dlq/internal/headers"
	"github.com/dlqops/dlq/internal/kafkaclient"
	"github.com/dlqops/dlq/internal/redrive"
	"github.com/dlqops/dlq/internal/routes"
	"github.com/dlqops/dlq/internal/store"
	"github.com/dlqops/dlq/internal/testenv"
	"github.com/dlqops/dlq/internal/testenv/kafkatest"
	"github.com/dlqops/dlq/internal/testenv/metrictest"
)

// Shape of the benchmark backlog: 1 KiB values spread over a few partitions, as a busy
// DLQ would hold them.
const (
	benchPartitions = 3
	benchValueSize  = 1024
	benchRoute      = "bench"
)

// benchEnv is what every redrive benchmark shares: the broker, an admin client and the
// backlog size (DLQ_BENCH_RECORDS, default 1,000,000).
type benchEnv struct {
	bootstrap string
	kafka     kafkaclient.Config
	admin     *kafka.AdminClient
	n         int
	seededAt  time.Time // the failure time written in every seeded record
}

func newBenchEnv(b *testing.B) *benchEnv {
	n := testenv.BenchSize(b, "DLQ_BENCH_RECORDS", 1_000_000, 1)
	bs := testenv.KafkaBootstrap(b)
	return &benchEnv{bootstrap: bs, kafka: kafkaclient.Config{BootstrapServers: bs}, admin: kafkatest.Admin(b, bs), n: n,
		seededAt: time.Now().Add(-time.Hour).UTC().Truncate(time.Millisecond)}
}

// benchValue is the value of every seeded record.
var benchValue = bytes.Repeat([]byte("0123456789abcdef"), benchValueSize/16)

// benchEnvelope is the canonical envelope of seeded record i: retry count retry, original
// topic target, original partition its own DLQ partition (so a redrive keeps partitions).
func (e *benchEnv) benchEnvelope(i, retry int, target string) headers.Envelope {
	return headers.Envelope{RetryCount: retry, OriginalTopic: target, OriginalPartition: int32(i % benchPartitions),
		OriginalOffset: int64(i), OriginalTimestamp: e.seededAt, FirstFailure: e.seededAt, LastFailure: e.seededAt,
		ErrorClass: "java.io.IOException", ErrorMessage: "downstream unavailable"}
}

func benchKey(i int) []byte { return []byte("key-" + strconv.Itoa(i)) }

// seedDLQ creates a DLQ topic holding e.n records with our headers and returns its name.
// Seeding is not measured, so it favours throughput: big batches, long linger, acks=1.
func (e *benchEnv) seedDLQ(b *testing.B, retry int, target string) string {
	start := time.Now()
	dlq := kafkatest.CreateTopic(b, e.bootstrap, benchPartitions, nil)
	p, err := kafka.NewProducer(&kafka.ConfigMap{"bootstrap.servers": e.bootstrap, "acks": 1, "linger.ms": 100,
		"batch.size": 1_000_000, "queue.buffering.max.messages": 200_000, "go.delivery.report.fields": "none",
		"go.logs.channel.enable": false})
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	var acked atomic.Int64
	var firstErr atomic.Value
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range p.Events() {
			if m, ok := ev.(*kafka.Message); ok {
				if m.TopicPartition.Error != nil {
					firstErr.CompareAndSwap(nil, m.TopicPartition.Error)
				}
				if acked.Add(1) == int64(e.n) {
					return
				}
			}
		}
	}()
	for i := 0; i < e.n; i++ {
		m := &kafka.Message{TopicPartition: kafka.TopicPartition{Topic: &dlq, Partition: int32(i % benchPartitions)},
			Key: benchKey(i), Value: benchValue, Timestamp: e.seededAt,
			Headers: headers.To[kafka.Header](headers.Encode(nil, e.benchEnvelope(i, retry, target), headers.DefaultEncodeOptions()))}
		for {
			err := p.Produce(m, nil)
			if err == nil {
				break
			}
			if ke, ok := err.(kafka.Error); !ok || ke.Code() != kafka.ErrQueueFull {
				b.Fatal(err)
			}
			time.Sleep(5 * time.Millisecond) // librdkafka drains its queue meanwhile
		}
	}
	select {
	case <-done:
	case <-time.After(5 * time.Minute):
		b.Fatalf("seeding: %d of %d records acknowledged after 5 min", acked.Load(), e.n)
	}
	if err, _ := firstErr.Load().(error); err != nil {
		b.Fatalf("seeding: %v", err)
	}
	b.Logf("seeded %d records of %d B into %s in %s", e.n, benchValueSize, dlq, time.Since(start).Round(time.Millisecond))
	return dlq
}

// highWatermarks returns the high watermark of each partition of topic.
func (e *benchEnv) highWatermarks(b *testing.B, topic string) []int64 {
	q := map[kafka.TopicPartition]kafka.OffsetSpec{}
	for p := range int32(benchPartitions) {
		q[kafka.TopicPartition{Topic: &topic, Partition: p}] = kafka.LatestOffsetSpec
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := e.admin.ListOffsets(ctx, q)
	if err != nil {
		b.Fatal(err)
	}
	hw := make([]int64, benchPartitions)
	for tp, info := range res.ResultInfos {
		if info.Error.Code() != kafka.ErrNoError {
			b.Fatalf("high watermark of %s/%d: %v", topic, tp.Partition, info.Error)
		}
		hw[tp.Partition] = int64(info.Offset)
	}
	return hw
}

// committed returns group's committed offset on each partition of topic (-1: none).
func (e *benchEnv) committed(b *testing.B, group, topic string) []int64 {
	tps := make([]kafka.TopicPartition, benchPartitions)
	for p := range tps {
		tps[p] = kafka.TopicPartition{Topic: &topic, Partition: int32(p)}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := e.admin.ListConsumerGroupOffsets(ctx, []kafka.ConsumerGroupTopicPartitions{{Group: group, Partitions: tps}})
	if err != nil {
		b.Fatal(err)
	}
	out := make([]int64, benchPartitions)
	for _, tp := range res.ConsumerGroupsTopicPartitions[0].Partitions {
		out[tp.Partition] = int64(tp.Offset)
	}
	return out
}

// drained reports whether group committed every partition of dlq up to its high watermark.
func (e *benchEnv) drained(b *testing.B, group, dlq string) bool {
	hw, c := e.highWatermarks(b, dlq), e.committed(b, group, dlq)
	for p := range hw {
		if c[p] < hw[p] {
			return false
		}
	}
	return true
}

// parkColumns are the dead_letters columns the store's COPY fills.
var parkColumns = []string{"dlq_topic", "dlq_partition", "dlq_offset",
	"original_topic", "original_partition", "original_offset", "original_timestamp", "record_timestamp",
	"key", "value", "header_keys", "header_values",
	"retry_count", "error_class", "error_message", "reason", "status", "route", "due_at",
	"stored_at", "changed_at", "changed_by"}

func joinColumns() string { return strings.Join(parkColumns, ", ") }

func sum(xs []int64) (s int64) {
	for _, x := range xs {
		s += x
	}
	return s
}

// benchRouteConfig is a route over dlq for a fresh group, with every seeded record due.
func benchRouteConfig(dlq string) routes.Config {
	rc := routes.Config{Name: benchRoute, Topics: []string{dlq}, Group: testenv.UniqueName("bench-"),
		Schedule: "@every 1h", Backoff: &routes.Backoff{None: true}}
	rc.WithDefaults()
	return rc
}

// startBenchEngine starts an engine on rc and returns once its consumer owns every DLQ
// partition, so a run started then covers the whole backlog and the measurement excludes
// the group join.
func (e *benchEnv) startBenchEngine(b *testing.B, st *store.Store, rc routes.Config) *redrive.Engine {
	reg := prometheus.NewRegistry()
	eng, err := redrive.New([]routes.Config{rc}, redrive.Options{Log: zerolog.New(zerolog.NewTestWriter(b)).Level(zerolog.ErrorLevel),
		Store: st, Kafka: e.kafka, Registry: reg, ReadPath: testenv.ReadPath()})
	if err != nil {
		b.Fatal(err)
	}
	if err := eng.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	// A fresh group has no committed offset: the engine counts an offset reset for each
	// partition inside its assignment callback. The callback runs on the engine's loop,
	// which serves run requests only between polls, so once every partition is counted the
	// next run sees them all.
	deadline := time.Now().Add(time.Minute)
	for offsetResets(b, reg) < benchPartitions {
		if time.Now().After(deadline) {
			stopEngine(b, eng)
			b.Fatal("the engine's consumer got no assignment within a minute")
		}
		time.Sleep(20 * time.Millisecond)
	}
	return eng
}

func offsetResets(b *testing.B, reg *prometheus.Registry) int {
	return int(metrictest.Sum(b, reg, "dlq_worker_offset_resets_total", nil))
}

func stopEngine(b *testing.B, eng *redrive.Engine) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := eng.Stop(ctx); err != nil {
		b.Fatal(err)
	}
}

// runUntilDrained runs the route until its group committed the whole DLQ. One run does
// it; a further one only follows a transient stall, and is part of the measurement.
func (e *benchEnv) runUntilDrained(b *testing.B, eng *redrive.Engine, rc routes.Config) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	for runs := 1; ; runs++ {
		if err := eng.RunNow(ctx, rc.Name); err != nil {
			b.Fatal(err)
		}
		if e.drained(b, rc.Group, rc.Topics[0]) {
			return
		}
		if runs == 5 {
			b.Fatalf("DLQ not drained after %d runs: committed %v, high watermarks %v", runs,
				e.committed(b, rc.Group, rc.Topics[0]), e.highWatermarks(b, rc.Topics[0]))
		}
		b.Logf("run %d did not drain the DLQ; running again", runs)
	}
}

// rawPipe is the baseline of a redrive: the same client settings, no bookkeeping. It
// connects both clients, untimed like the engine's start, and returns the pipe to time:
// read every partition of dlq from the start to its high watermark, produce each record
// as it is to the same partition of target, wait for every acknowledgement, commit.
func (e *benchEnv) rawPipe(b *testing.B, dlq, target string) func() {
	cc := kafkaclient.ConsumerConfig(e.kafka, testenv.UniqueName("raw-"))
	pc := kafkaclient.ProducerConfig(e.kafka)
	// As the engine's clients.
	pc["go.delivery.report.fields"] = "none"
	kafkaclient.PipeQueues(cc, pc, routes.DefaultMaxInFlight)
	c, err := kafka.NewConsumer(&cc)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = c.Close() })
	p, err := kafka.NewProducer(&pc)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(p.Close)
	for _, topic := range []string{dlq, target} {
		if _, err := p.GetMetadata(&topic, false, 10_000); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := c.GetMetadata(&dlq, false, 10_000); err != nil {
		b.Fatal(err)
	}
	hw := e.highWatermarks(b, dlq)
	return func() {
		tps := make([]kafka.TopicPartition, benchPartitions)
		reading := make([]bool, benchPartitions)
		left := 0 // partitions still below their high watermark
		for i := range tps {
			tps[i] = kafka.TopicPartition{Topic: &dlq, Partition: int32(i), Offset: 0} // the log start: fetching starts without an offset query
			if reading[i] = hw[i] > 0; reading[i] {
				left++
			}
		}
		if err := c.Assign(tps); err != nil {
			b.Fatal(err)
		}
		var acked atomic.Int64
		var firstErr atomic.Value
		acksDone := make(chan struct{})
		total := sum(hw)
		go func() {
			defer close(acksDone)
			for acked.Load() < total {
				ev, open := <-p.Events()
				if !open {
					return // closed by the cleanup after a failure
				}
				m, ok := ev.(*kafka.Message)
				if !ok {
					continue
				}
				if m.TopicPartition.Error != nil {
					firstErr.CompareAndSwap(nil, m.TopicPartition.Error)
				}
				acked.Add(1)
			}
		}()
		for left > 0 {
			ev := c.Poll(100)
			m, ok := ev.(*kafka.Message)
			if !ok {
				if ke, isErr := ev.(kafka.Error); isErr && ke.IsFatal() {
					b.Fatal(ke)
				}
				continue
			}
			if part := m.TopicPartition.Partition; reading[part] && int64(m.TopicPartition.Offset)+1 >= hw[part] {
				reading[part] = false
				left--
			}
			m.TopicPartition = kafka.TopicPartition{Topic: &target, Partition: m.TopicPartition.Partition}
			for {
				err := p.Produce(m, nil)
				if err == nil {
					break
				}
				if ke, ok := err.(kafka.Error); !ok || ke.Code() != kafka.ErrQueueFull {
					b.Fatal(err)
				}
				time.Sleep(time.Millisecond)
			}
		}
		<-acksDone
		if err, _ := firstErr.Load().(error); err != nil {
			b.Fatal(err)
		}
		for i := range tps {
			tps[i].Offset = kafka.Offset(hw[i])
		}
		if _, err := c.CommitOffsets(tps); err != nil {
			b.Fatal(err)
		}
	}
}
