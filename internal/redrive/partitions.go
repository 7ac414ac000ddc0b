// The partitions the route holds, and the consumer calls that pause, resume and rewind
// them. partition values are owned by the loop goroutine (rebalances run inside its Poll,
// see rebalance.go); a revoked one is marked gone so that late answers for it are ignored.

package redrive

import (
	"strconv"
	"sync"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/rs/zerolog"

	"github.com/dlqops/dlq/internal/kafkafast"
	"github.com/dlqops/dlq/internal/redrive/tracker"
)

type partKey struct {
	topic     string
	partition int32
}

// partition is the state of one assigned DLQ partition, owned by the loop goroutine.
type partition struct {
	key    partKey
	trk    *tracker.Partition // nil until the start offset is known
	stored int64              // last watermark handed to StoreOffsets
	// ledgered is the ledger's position, written and visible (a next life resumes there);
	// -1 unknown.
	ledgered int64
	// durable is the part of ledgered PostgreSQL confirmed flushed: nothing is stored for
	// commit above it; -1 unknown.
	durable int64
	window  int64 // how far past the ledger's position it may take records (throttle.go)
	checked int64 // highest committed offset already checked against the ledger
	gone    bool  // revoked: late acknowledgements are ignored
	reading bool  // in the current run and below its high watermark
	paused  bool
	hw      int64 // high watermark snapshot of the current run
	from    int64 // watermark when the current run started on it
	counts  counts
	// The fetch watch (fetchstall.go): the next expected offset it last saw, and since
	// when it has not moved.
	quietAt    int64
	quietSince time.Time
}

type counts struct {
	redriven, scheduled, parked, errors int64
	ledgerDone                          bool // this run's ledger row is written
}

func (p *partition) log(l zerolog.Logger) *zerolog.Logger {
	l = l.With().Str("topic", p.key.topic).Int32("partition", p.key.partition).Logger()
	return &l
}

func partitionLabel(p int32) string { return strconv.FormatInt(int64(p), 10) }

// partitions are the DLQ partitions the route holds, by key; owned by the loop goroutine.
type partitions struct {
	consumer *kafka.Consumer
	records  *kafkafast.Queue // where resumed partitions' records go (route); nil: Poll hands them out
	log      zerolog.Logger
	byKey    map[partKey]*partition
	// assigned is set by an assignment (even an empty one) and cleared by a revocation
	// that leaves the worker waiting for the next one (a rebalance).
	assigned bool
}

func newPartitions(c *kafka.Consumer, records *kafkafast.Queue, log zerolog.Logger) *partitions {
	return &partitions{consumer: c, records: records, log: log, byKey: map[partKey]*partition{}}
}

// of is the held partition of tp, nil when it is not held.
func (ps *partitions) of(tp kafka.TopicPartition) *partition {
	return ps.byKey[partKey{*tp.Topic, tp.Partition}]
}

// assign takes the partitions of an assignment (paused until a run) and hands the
// consumer their start offsets.
func (ps *partitions) assign(tps []kafka.TopicPartition, parts []*partition) error {
	for _, p := range parts {
		ps.byKey[p.key] = p
	}
	var err error
	if ps.cooperative() {
		err = ps.consumer.IncrementalAssign(tps)
	} else {
		err = ps.consumer.Assign(tps)
	}
	if err != nil {
		ps.log.Error().Err(err).Msg("assign failed")
	}
	ps.setPaused(parts, true)
	ps.assigned = true
	return err
}

// revoke lets go of parts (marked gone: late answers for them are ignored).
func (ps *partitions) revoke(tps []kafka.TopicPartition, parts []*partition) {
	for _, p := range parts {
		p.gone = true
		delete(ps.byKey, p.key)
	}
	var err error
	if ps.cooperative() {
		err = ps.consumer.IncrementalUnassign(tps)
	} else {
		err = ps.consumer.Unassign()
	}
	if err != nil {
		ps.log.Error().Err(err).Msg("unassign failed")
	}
}

func (ps *partitions) cooperative() bool { return ps.consumer.GetRebalanceProtocol() == "COOPERATIVE" }

func (ps *partitions) anyReading() bool {
	for _, p := range ps.byKey {
		if p.reading {
			return true
		}
	}
	return false
}

// reading are the partitions the current run still reads.
func (ps *partitions) reading() []*partition {
	var out []*partition
	for _, p := range ps.byKey {
		if p.reading {
			out = append(out, p)
		}
	}
	return out
}

func (ps *partitions) setPaused(parts []*partition, pause bool) {
	if tps := ps.switchPaused(parts, pause); !pause && len(tps) > 0 {
		ps.wakeFetcher(tps)
	}
}

// switchPaused pauses or resumes those of parts that are not so yet and returns them. A
// resume does not wake the fetcher (see wakeFetcher): the caller sends the partitions'
// leaders a request of its own.
func (ps *partitions) switchPaused(parts []*partition, pause bool) []kafka.TopicPartition {
	var tps []kafka.TopicPartition
	var switched []*partition
	for _, p := range parts {
		if p.paused != pause {
			p.paused = pause
			switched = append(switched, p)
			tps = append(tps, kafka.TopicPartition{Topic: &p.key.topic, Partition: p.key.partition})
		}
	}
	if len(tps) == 0 {
		return nil
	}
	var err error
	if pause {
		err = ps.consumer.Pause(tps)
	} else {
		ps.route(tps)
		ps.seekNext(switched)
		err = ps.consumer.Resume(tps)
	}
	if err != nil {
		ps.log.Error().Err(err).Bool("pause", pause).Msg("pause/resume failed")
		return nil
	}
	return tps
}

// seekNext sets the fetch position of each of parts whose next offset the worker knows
// to that offset (a resume, a fetch-stall kick). librdkafka would resume where its own
// bookkeeping says, and under load it handed out a partition's first record again in the
// run after an operator paused one that had read it
// (TestResumeFetchesFromTheNextOffsetTheWorkerExpects). The worker's tracker is the
// truth. A partition whose next offset is unknown keeps librdkafka's position, which the
// group's committed offset set.
func (ps *partitions) seekNext(parts []*partition) {
	var tps []kafka.TopicPartition
	for _, p := range parts {
		if next, known := p.nextOffset(); known {
			tps = append(tps, kafka.TopicPartition{Topic: &p.key.topic, Partition: p.key.partition, Offset: kafka.Offset(next)})
		}
	}
	if len(tps) == 0 {
		return
	}
	const msg = "cannot set the fetch position to the next offset the worker expects; librdkafka fetches from its own"
	sought, err := ps.consumer.SeekPartitions(tps)
	if err != nil {
		ps.log.Warn().Err(err).Int("partitions", len(tps)).Msg(msg)
		return
	}
	for _, tp := range sought {
		if tp.Error == nil {
			continue
		}
		ev := ps.log.Warn()
		if kerr, ok := tp.Error.(kafka.Error); ok && kerr.Code() == kafka.ErrState {
			ev = ps.log.Debug() // not fetching yet: its assignment's start offset is the tracker's
		}
		ev.Err(tp.Error).Str("topic", *tp.Topic).Int32("partition", tp.Partition).Int64("offset", int64(tp.Offset)).Msg(msg)
	}
}

// route sends the records of tps to the worker's queue, as each resume does: librdkafka
// clears a partition's route when it stops fetching it (a revocation, which may land
// after the next assignment) and keeps its records in the partition's own queue until
// it is routed again (kafkafast.Queue). A route that fails leaves the records to Poll.
func (ps *partitions) route(tps []kafka.TopicPartition) {
	if ps.records == nil {
		return
	}
	if err := ps.records.Route(tps); err != nil {
		ps.log.Warn().Err(err).Msg("records not routed to the worker's queue; Poll hands them out")
	}
}

// watermarkCalls bounds the watermark requests on their way at once (each holds a thread
// in librdkafka's blocking call).
const watermarkCalls = 16

// watermarks reads the low and high watermarks of parts, the requests on their way
// together rather than one after the other: a run's start waits one round trip for them.
func (ps *partitions) watermarks(parts []*partition) (low, high []int64, errs []error) {
	low, high, errs = make([]int64, len(parts)), make([]int64, len(parts)), make([]error, len(parts))
	slots := make(chan struct{}, watermarkCalls)
	var wg sync.WaitGroup
	for i, p := range parts {
		slots <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-slots; wg.Done() }()
			low[i], high[i], errs[i] = ps.consumer.QueryWatermarkOffsets(p.key.topic, p.key.partition, int(callTimeout/time.Millisecond))
		}()
	}
	wg.Wait()
	return low, high, errs
}

// wakeFetcher makes the consumer fetch resumed partitions now. librdkafka's Resume does
// not wake the broker thread that fetches them, which sleeps up to a second while none of
// its partitions is fetchable (confluent-kafka-go#630), so every run and every throttle
// lifted started a second late. A request to each partition's leader (its watermarks,
// answered at once) wakes those threads, and the first fetch leaves with its answer, which
// is not needed. Waiting longer than librdkafka's own one-second wakeup would be useless.
func (ps *partitions) wakeFetcher(tps []kafka.TopicPartition) {
	for _, tp := range tps {
		if _, _, err := ps.consumer.QueryWatermarkOffsets(*tp.Topic, tp.Partition, int(wakeTimeout/time.Millisecond)); err != nil {
			ps.log.Debug().Err(err).Msg("fetcher wake-up request failed; librdkafka fetches within a second anyway")
			return
		}
	}
}

func (ps *partitions) stopReading(p *partition) {
	p.reading = false
	ps.setPaused([]*partition{p}, true)
}

// rewind makes the consumer hand out m again, after a pause of its partition.
func (ps *partitions) rewind(m *kafka.Message) {
	if p := ps.of(m.TopicPartition); p != nil {
		ps.setPaused([]*partition{p}, true)
		if p.trk != nil && int64(m.TopicPartition.Offset) < p.trk.Next() {
			return // fetched before a restart moved the partition on: already behind it
		}
	}
	if err := ps.consumer.Seek(m.TopicPartition, 0); err != nil {
		ps.log.Error().Err(err).Str("topic", *m.TopicPartition.Topic).Int32("partition", m.TopicPartition.Partition).
			Int64("offset", int64(m.TopicPartition.Offset)).Msg("rewind failed")
	}
}
