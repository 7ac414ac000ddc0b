// Command peerpipe is the peer baseline of the dlq-worker benchmark: a re-creation of the
// hot loop of the closest Go peer, Trendyol's kafka-cronsumer (a cron-scheduled
// exception-topic retrier), written from reading its source (its module is not served here,
// so nothing of it is imported or copied). Like the peer it uses segmentio/kafka-go:
//   - a group Reader (the peer's defaults: 1 s commit interval, 1 MB fetches, start at the
//     earliest offset) whose ReadMessage marks each record committed as it hands it over,
//     so the peer commits a record before it is produced;
//   - one listener that reads the retry headers of each record (adding the missing ones,
//     as the peer does), copies them and hands the record over an unbuffered channel to
//     -concurrency handlers (tuned: 300);
//   - handlers that each write their record to the target with a synchronous
//     Writer.WriteMessages (LeastBytes balancer, -batch-size records, -batch-timeout, tuned:
//     10 ms), as a consume function that redrives through the peer's Produce does.
//
// The peer's Writer leaves RequiredAcks at kafka-go's zero value, acks=0: that is -acks none,
// the default. -acks all waits for every in-sync replica instead. kafka-go has no
// idempotent producer, so neither mode is idempotent.
//
// The peer reads until its cron iteration's duration ends; peerpipe stops, as rawpipe does,
// once it has read every partition to its high watermark of the start (queried untimed
// before joining), every handler has returned and the writer is closed; the reader then
// makes its last commit. It prints one JSON line: the time from the assignment to the
// writer's close (the peer waits for no commit: it commits on a timer, records it has
// read but not yet written), the records it read, those written (WriteMessages returned
// no error), those landed (how much the target grew, counted untimed afterwards: acks=0
// can lose records that were "written") and its peak resident memory.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/dlqops/dlq/internal/procstat"
)

// result is what peerpipe prints.
type result struct {
	ElapsedMs float64 `json:"elapsed_ms"`
	Records   int64   `json:"records"` // read from the DLQ and handed to a handler
	Written   int64   `json:"written"` // WriteMessages returned no error
	Landed    int64   `json:"landed"`  // how much the target's high watermarks grew
	PeakMiB   float64 `json:"peak_mib"`
}

// settings are the peer's knobs the benchmark sets.
type settings struct {
	bootstrap, group, from, to string
	acks                       kafka.RequiredAcks
	concurrency, batchSize     int
	batchTimeout               time.Duration
}

func main() {
	var s settings
	flag.StringVar(&s.bootstrap, "bootstrap", "127.0.0.1:59092", "Kafka bootstrap server")
	flag.StringVar(&s.group, "group", "", "consumer group")
	flag.StringVar(&s.from, "from", "", "topic to read")
	flag.StringVar(&s.to, "to", "", "topic to produce to")
	acks := flag.String("acks", "none", `"none" (the peer's default, acks=0) or "all"`)
	flag.IntVar(&s.concurrency, "concurrency", 300, "concurrent handlers")
	flag.IntVar(&s.batchSize, "batch-size", 100, "writer batch size in records (the peer's default)")
	flag.DurationVar(&s.batchTimeout, "batch-timeout", 10*time.Millisecond, "writer batch timeout")
	flag.Parse()
	switch *acks {
	case "none":
		s.acks = kafka.RequireNone
	case "all":
		s.acks = kafka.RequireAll
	default:
		fmt.Fprintf(os.Stderr, "peerpipe: -acks %q: want none or all\n", *acks)
		os.Exit(2)
	}
	res, err := pipe(context.Background(), s)
	if err != nil {
		fmt.Fprintln(os.Stderr, "peerpipe:", err)
		os.Exit(1)
	}
	if err := json.NewEncoder(os.Stdout).Encode(res); err != nil {
		os.Exit(1)
	}
}

func pipe(ctx context.Context, s settings) (result, error) {
	client := &kafka.Client{Addr: kafka.TCP(s.bootstrap), Timeout: 10 * time.Second}
	low, high, err := watermarks(ctx, client, s.from)
	if err != nil {
		return result{}, err
	}
	_, before, err := watermarks(ctx, client, s.to)
	if err != nil {
		return result{}, err
	}
	left := 0 // partitions still below their high watermark
	for p := range high {
		if high[p] > low[p] {
			left++
		}
	}

	// The reader logs its subscription right after it starts fetching the assigned
	// partitions: that is the assignment, where rawpipe starts its clock.
	assigned := make(chan time.Time, 1)
	r := kafka.NewReader(kafka.ReaderConfig{
		Brokers: []string{s.bootstrap}, GroupID: s.group, GroupTopics: []string{s.from},
		MinBytes: 1, MaxBytes: 1e6, MaxWait: 10 * time.Second, CommitInterval: time.Second,
		HeartbeatInterval: 3 * time.Second, SessionTimeout: 30 * time.Second, RebalanceTimeout: 30 * time.Second,
		StartOffset: kafka.FirstOffset, RetentionTime: 24 * time.Hour,
		Logger: kafka.LoggerFunc(func(msg string, _ ...any) {
			if msg == "subscribed to topics and partitions: %+v" {
				select {
				case assigned <- time.Now():
				default:
				}
			}
		}),
	})
	w := &kafka.Writer{Addr: kafka.TCP(s.bootstrap), Balancer: &kafka.LeastBytes{},
		BatchTimeout: s.batchTimeout, BatchSize: s.batchSize, AllowAutoTopicCreation: true, RequiredAcks: s.acks}

	// The handlers: each writes the records it is handed, one synchronous write at a time.
	var written, failed atomic.Int64
	var firstErr atomic.Value
	records := make(chan kafka.Message) // unbuffered, as the peer's
	var handlers sync.WaitGroup
	for range s.concurrency {
		handlers.Go(func() {
			for m := range records {
				err := w.WriteMessages(ctx, kafka.Message{Topic: s.to, Key: m.Key, Value: m.Value, Headers: copyHeaders(m.Headers)})
				if err != nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, err)
					continue
				}
				written.Add(1)
			}
		})
	}

	// The listener.
	var read int64
	var readErr error
	for left > 0 {
		m, err := r.ReadMessage(ctx)
		if err != nil {
			readErr = err
			break
		}
		read++
		if m.Offset+1 == high[m.Partition] {
			left--
		}
		retryHeaders(&m)
		m.Headers = copyHeaders(m.Headers)
		records <- m
	}
	close(records)
	handlers.Wait()
	werr := w.Close()
	// The clock stops here, at the last write: the peer commits on its own 1 s timer,
	// records it read before writing them, and waits for no commit.
	end := time.Now()
	// The last commit, untimed. Close waits for each partition's fetch, which the broker
	// holds for up to MaxWait at the end of the log.
	rerr := r.Close()
	if err := errors.Join(readErr, werr, rerr); err != nil {
		return result{}, err
	}
	var start time.Time
	select {
	case start = <-assigned:
	default:
		return result{}, errors.New("the reader never logged its subscription")
	}
	elapsed := end.Sub(start)
	if n := failed.Load(); n > 0 {
		fmt.Fprintf(os.Stderr, "peerpipe: %d writes failed, the first: %v\n", n, firstErr.Load())
	}
	res := result{ElapsedMs: float64(elapsed.Microseconds()) / 1000, Records: read, Written: written.Load()}
	res.Landed, err = landed(ctx, client, s.to, before, res.Written)
	if err != nil {
		return result{}, err
	}
	res.PeakMiB, err = procstat.PeakRSSMiB(os.Getpid())
	return res, err
}

// retryHeaders reads the peer's retry headers of m (retry count, retry attempt, produce
// time), adding each with its initial value when it is missing, as the peer does when it
// wraps a record it read.
func retryHeaders(m *kafka.Message) {
	for _, h := range [...]struct{ key, initial string }{
		{"x-retry-count", "0"}, {"x-retry-attempt-count", "1"}, {"x-produce-time", "0"},
	} {
		found := false
		for _, mh := range m.Headers {
			if mh.Key == h.key {
				_, _ = strconv.Atoi(string(mh.Value))
				found = true
				break
			}
		}
		if !found {
			m.Headers = append(m.Headers, kafka.Header{Key: h.key, Value: []byte(h.initial)})
		}
	}
}

// copyHeaders copies the header slice, as the peer does between its message types.
func copyHeaders(hs []kafka.Header) []kafka.Header {
	out := make([]kafka.Header, 0, len(hs))
	return append(out, hs...)
}

// watermarks returns the low and high watermark of every partition of topic, by
// partition, retrying for up to 30 s: a topic created moments before may not be known to
// every part of the broker yet.
func watermarks(ctx context.Context, client *kafka.Client, topic string) (low, high map[int]int64, err error) {
	deadline := time.Now().Add(30 * time.Second)
	for {
		low, high, err = queryWatermarks(ctx, client, topic)
		if err == nil || time.Now().After(deadline) {
			return low, high, err
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func queryWatermarks(ctx context.Context, client *kafka.Client, topic string) (low, high map[int]int64, err error) {
	md, err := client.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{topic}})
	if err != nil {
		return nil, nil, err
	}
	if len(md.Topics) != 1 || md.Topics[0].Error != nil {
		return nil, nil, fmt.Errorf("metadata of %s: %v", topic, md.Topics)
	}
	var reqs []kafka.OffsetRequest
	for _, p := range md.Topics[0].Partitions {
		reqs = append(reqs, kafka.FirstOffsetOf(p.ID), kafka.LastOffsetOf(p.ID))
	}
	res, err := client.ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{topic: reqs}})
	if err != nil {
		return nil, nil, err
	}
	low, high = map[int]int64{}, map[int]int64{}
	for _, p := range res.Topics[topic] {
		if p.Error != nil {
			return nil, nil, fmt.Errorf("offsets of %s/%d: %w", topic, p.Partition, p.Error)
		}
		low[p.Partition], high[p.Partition] = p.FirstOffset, p.LastOffset
	}
	return low, high, nil
}

// landed returns how much topic's high watermarks grew since before, waiting up to five
// seconds for them to reach want: with acks=0 the broker may still be appending what the
// writer sent.
func landed(ctx context.Context, client *kafka.Client, topic string, before map[int]int64, want int64) (int64, error) {
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, after, err := watermarks(ctx, client, topic)
		if err != nil {
			return 0, err
		}
		var n int64
		for p, hw := range after {
			n += hw - before[p]
		}
		if n >= want || time.Now().After(deadline) {
			return n, nil
		}
		time.Sleep(100 * time.Millisecond)
	}
}
