// Package franzredrive is a prototype of the worker's redrive read/produce path on
// franz-go, a pure-Go Kafka client, in place of confluent-kafka-go and kafkafast. It is
// not wired into the product: the benchmark's franzpipe runs it, so that the client
// choice is decided on measured numbers (the development docs' decision record).
//
// Drain joins a consumer group on a DLQ, reads each assigned partition from its low to its
// high watermark of that moment in batched fetches, produces every record asynchronously
// (acks=all, idempotent: franz-go's defaults), waits for every acknowledgement and then
// commits: nothing is committed before it is acknowledged. As a plain pipe it produces each
// record as it is to the same partition of another topic; as a redrive it does the
// worker's per-record hop with the same headers package the engine uses: decode the
// envelope, encode the next hop's headers (DeadLetteredAt, Redriven) and produce to the
// original topic and partition. It keeps none of the engine's bookkeeping (classification,
// store, ledger).
package franzredrive

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/dlqops/dlq/internal/headers"
)

// Options say what Drain reads and where it writes.
type Options struct {
	Seeds []string
	Group string
	DLQ   string
	// To is the topic a plain pipe writes each record to, partition for partition; empty:
	// each record is redriven to its original topic and partition, its headers encoded
	// for the next hop with Encode.
	To     string
	Encode headers.EncodeOptions
}

// Result is what one Drain did: how long it took from the assignment to the commit and
// how many records it moved.
type Result struct {
	Elapsed time.Duration
	Records int64
}

// Drain moves the backlog of opts.DLQ that its assignment finds and commits it.
func Drain(ctx context.Context, opts Options) (Result, error) {
	assigned := make(chan time.Time, 1)
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(opts.Seeds...),
		kgo.ConsumerGroup(opts.Group),
		kgo.ConsumeTopics(opts.DLQ),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.DisableAutoCommit(),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.OnPartitionsAssigned(func(context.Context, *kgo.Client, map[string][]int32) {
			select {
			case assigned <- time.Now():
			default:
			}
		}),
	)
	if err != nil {
		return Result{}, err
	}
	defer cl.Close()
	// Joining the group starts with the first poll; the clock starts at the assignment.
	first := cl.PollFetches(ctx)
	start := <-assigned
	high, total, err := backlog(ctx, kadm.NewClient(cl), opts.DLQ)
	if err != nil {
		return Result{}, err
	}
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		perr error
	)
	acked := func(_ *kgo.Record, err error) {
		if err != nil {
			mu.Lock()
			perr = errors.Join(perr, err)
			mu.Unlock()
		}
		wg.Done()
	}
	left := len(high)
	for fetches := first; ; fetches = cl.PollFetches(ctx) {
		if errs := fetches.Errors(); len(errs) > 0 {
			return Result{}, fmt.Errorf("fetch %s[%d]: %w", errs[0].Topic, errs[0].Partition, errs[0].Err)
		}
		var herr error
		fetches.EachRecord(func(r *kgo.Record) {
			if r.Offset+1 == high[r.Partition] {
				left--
			}
			out := r
			if opts.To != "" {
				r.Topic = opts.To // the same partition: the manual partitioner keeps r.Partition
			} else {
				var rerr error
				if out, rerr = redriven(r, opts.Encode); rerr != nil {
					herr = errors.Join(herr, rerr)
					return
				}
			}
			wg.Add(1)
			cl.Produce(ctx, out, acked)
		})
		if herr != nil {
			wg.Wait()
			return Result{}, herr
		}
		if left == 0 {
			break // no poll after the last record: it would wait for records that never come
		}
	}
	wg.Wait()
	if perr != nil {
		return Result{}, perr
	}
	if err := commit(ctx, cl, opts.DLQ, high); err != nil {
		return Result{}, err
	}
	return Result{Elapsed: time.Since(start), Records: total}, nil
}

// redriven is r's next hop: to its original topic and partition, our headers encoded
// from its envelope. franz-go keeps a record's headers until it is acknowledged, so each
// record gets its own header list and values (the fast path's encoder reuses one, as
// librdkafka copies them).
func redriven(r *kgo.Record, opts headers.EncodeOptions) (*kgo.Record, error) {
	dec := headers.DecodeOf(r.Headers)
	if dec.Problem != nil {
		return nil, fmt.Errorf("%s[%d]@%d cannot be redriven: %w", r.Topic, r.Partition, r.Offset, dec.Problem)
	}
	env := dec.Envelope
	from := headers.Coordinates{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset}
	var s headers.Scratch
	hs := headers.AppendEncoded(make([]kgo.RecordHeader, 0, len(r.Headers)+8), &s, r.Headers,
		env.DeadLetteredAt(r.Timestamp).Redriven(from, time.Now()), opts)
	return &kgo.Record{Topic: env.OriginalTopic, Partition: env.OriginalPartition, Key: r.Key, Value: r.Value,
		Timestamp: r.Timestamp, Headers: hs}, nil
}

// backlog returns the high watermark of each partition of topic that holds records, and
// how many records they hold.
func backlog(ctx context.Context, adm *kadm.Client, topic string) (map[int32]int64, int64, error) {
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return nil, 0, err
	}
	starts, err := adm.ListStartOffsets(ctx, topic)
	if err != nil {
		return nil, 0, err
	}
	high := map[int32]int64{}
	var total int64
	var lerr error
	ends.Each(func(o kadm.ListedOffset) {
		low, ok := starts.Lookup(topic, o.Partition)
		if o.Err != nil || !ok || low.Err != nil {
			lerr = errors.Join(lerr, o.Err, low.Err, fmt.Errorf("no offsets for %s[%d]", topic, o.Partition))
			return
		}
		if o.Offset > low.Offset {
			high[o.Partition] = o.Offset
			total += o.Offset - low.Offset
		}
	})
	return high, total, lerr
}

// commit commits the group's position on topic at each partition's high watermark.
func commit(ctx context.Context, cl *kgo.Client, topic string, high map[int32]int64) error {
	offsets := map[string]map[int32]kgo.EpochOffset{topic: {}}
	for part, off := range high {
		offsets[topic][part] = kgo.EpochOffset{Epoch: -1, Offset: off}
	}
	var cerr error
	cl.CommitOffsetsSync(ctx, offsets, func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
		cerr = err
		if err != nil {
			return
		}
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				if e := kerr.ErrorForCode(p.ErrorCode); e != nil {
					cerr = errors.Join(cerr, fmt.Errorf("commit %s[%d]: %w", t.Topic, p.Partition, e))
				}
			}
		}
	})
	return cerr
}
