package redrive_test

import (
	"slices"
	"testing"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/dlqops/dlq/internal/store"
	"github.com/dlqops/dlq/internal/store/storetest"
	"github.com/dlqops/dlq/internal/testenv"
	"github.com/dlqops/dlq/internal/testenv/kafkatest"
)

// BenchmarkSharePointers: a run over a DLQ of share-group pointers (six headers, no key,
// no value) whose consecutive records name different source partitions in turn, each
// resolved from its 1 KiB source record and redriven to the source topic, against a raw
// consume→produce pipe reading the same records from an identical copy of the source
// (which, unlike the source, does not grow by a backlog per run). The two take turns for
// DLQ_BENCH_ROUNDS rounds (default 3), the order swapped every round; benchratio takes
// the median of the per-round ratios.
func BenchmarkSharePointers(b *testing.B) {
	e := newBenchEnv(b)
	e.n -= e.n % benchPartitions // every source partition holds as many records as each DLQ partition pointers
	rounds := testenv.BenchSize(b, "DLQ_BENCH_ROUNDS", 3, 1)
	named := kafkatest.CreateTopic(b, e.bootstrap, benchPartitions, nil) // only named by the seeded headers
	source := e.seedDLQ(b, 0, named)
	copyOf := e.seedDLQ(b, 0, named)
	dlq := e.seedPointers(b, source)
	sides := map[string]func(b *testing.B){
		"raw": func(b *testing.B) {
			e.benchLoop(b, func() func() {
				return e.rawPipe(b, copyOf, kafkatest.CreateTopic(b, e.bootstrap, benchPartitions, nil))
			})
		},
		"ours": func(b *testing.B) {
			st := storetest.New(b)
			e.benchEngine(b, dlq, func() *store.Store { return st }, func(*store.Store) {
				// Every pointer was redriven to its source: it grows by a backlog per run.
				if got := sum(e.highWatermarks(b, source)); got%int64(e.n) != 0 || got < 2*int64(e.n) {
					b.Fatalf("source holds %d records, want a multiple of %d above it", got, e.n)
				}
			})
		},
	}
	order := []string{"raw", "ours"}
	for range rounds {
		for _, side := range order {
			b.Run(side, sides[side])
		}
		slices.Reverse(order)
	}
}

// seedPointers creates a DLQ holding a pointer to each record of source (seeded by
// seedDLQ: record i at partition i%P, offset i/P). The j-th pointer of DLQ partition d
// names source partition (d+j)%P at offset j, so consecutive pointers of a DLQ partition
// never name the same source partition.
func (e *benchEnv) seedPointers(b *testing.B, source string) string {
	dlq := kafkatest.CreateTopic(b, e.bootstrap, benchPartitions, nil)
	const batch = 50_000 // below librdkafka's queue limit
	var msgs []*kafka.Message
	for k := range e.n {
		d, j := int32(k%benchPartitions), int64(k/benchPartitions)
		msgs = append(msgs, sharePointer(d, source, (d+int32(j))%benchPartitions, j))
		if len(msgs) == batch || k == e.n-1 {
			produceTo(b, e.bootstrap, dlq, msgs...)
			msgs = msgs[:0]
		}
	}
	return dlq
}
