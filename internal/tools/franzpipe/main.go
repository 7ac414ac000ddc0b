// Command franzpipe is the strongest Go baseline of the dlq-worker benchmark: the same
// move as rawpipe on franz-go, a pure-Go client that fetches in batches and produces
// asynchronously. It joins a consumer group on one topic and, once its partitions are
// assigned, reads each from its low to its high watermark of that moment in batched
// fetches, produces every record as it is to the same partition of another topic (acks=all,
// idempotent: franz-go's defaults), waits for every acknowledgement, commits and exits. It
// prints one JSON line, as rawpipe does: how long that took from the assignment to the
// commit, how many records it moved and its peak resident memory. It is a benchmark tool
// only: no product binary links franz-go.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/dlqops/dlq/internal/procstat"
)

// result is what franzpipe prints.
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
	flag.Parse()
	res, err := pipe(strings.Split(*bootstrap, ","), *group, *from, *to)
	if err != nil {
		fmt.Fprintln(os.Stderr, "franzpipe:", err)
		os.Exit(1)
	}
	if err := json.NewEncoder(os.Stdout).Encode(res); err != nil {
		os.Exit(1)
	}
}

func pipe(seeds []string, group, from, to string) (result, error) {
	ctx := context.Background()
	assigned := make(chan time.Time, 1)
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(seeds...),
		kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(from),
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
		return result{}, err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	// Joining the group starts with the first poll; the clock starts at the assignment.
	first := cl.PollFetches(ctx)
	start := <-assigned
	ends, err := adm.ListEndOffsets(ctx, from)
	if err != nil {
		return result{}, err
	}
	starts, err := adm.ListStartOffsets(ctx, from)
	if err != nil {
		return result{}, err
	}
	high := map[int32]int64{}
	var total int64
	var lerr error
	ends.Each(func(o kadm.ListedOffset) {
		low, ok := starts.Lookup(from, o.Partition)
		if o.Err != nil || !ok || low.Err != nil {
			lerr = errors.Join(lerr, o.Err, low.Err, fmt.Errorf("no start offset for partition %d", o.Partition))
			return
		}
		if o.Offset > low.Offset {
			high[o.Partition] = o.Offset
			total += o.Offset - low.Offset
		}
	})
	if lerr != nil {
		return result{}, lerr
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
			return result{}, fmt.Errorf("fetch %s[%d]: %w", errs[0].Topic, errs[0].Partition, errs[0].Err)
		}
		fetches.EachRecord(func(r *kgo.Record) {
			if r.Offset+1 == high[r.Partition] {
				left--
			}
			r.Topic = to // the same partition: the manual partitioner keeps r.Partition
			wg.Add(1)
			cl.Produce(ctx, r, acked)
		})
		if left == 0 {
			break // no poll after the last record: it would wait for records that never come
		}
	}
	wg.Wait()
	if perr != nil {
		return result{}, perr
	}
	commit := map[string]map[int32]kgo.EpochOffset{from: {}}
	for part, off := range high {
		commit[from][part] = kgo.EpochOffset{Epoch: -1, Offset: off}
	}
	var cerr error
	cl.CommitOffsetsSync(ctx, commit, func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
		cerr = err
		if err == nil {
			for _, t := range resp.Topics {
				for _, p := range t.Partitions {
					if e := kerr.ErrorForCode(p.ErrorCode); e != nil {
						cerr = errors.Join(cerr, fmt.Errorf("commit %s[%d]: %w", t.Topic, p.Partition, e))
					}
				}
			}
		}
	})
	if cerr != nil {
		return result{}, cerr
	}
	elapsed := time.Since(start)
	peak, err := procstat.PeakRSSMiB(os.Getpid())
	return result{ElapsedMs: float64(elapsed.Microseconds()) / 1000, Records: total, PeakMiB: peak}, err
}
