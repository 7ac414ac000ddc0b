package redrive

import (
	"errors"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
)

// Tuning of the source fetcher.
const (
	// fetchSkipMax is how far ahead of a partition's fetch position a pointer may be
	// before the fetcher seeks instead of reading its way there.
	fetchSkipMax = 1000
	// fetchBufBytes caps the records read ahead per source partition and not asked for
	// yet: above it the partition is paused until pointers consume half of them.
	fetchBufBytes = 4 << 20
	// fetchIdle is how long a source partition stays assigned without a pointer to it.
	fetchIdle = time.Minute
	// watermarksTTL is how old a source partition's cached watermarks may be.
	watermarksTTL = 5 * time.Second
)

// errFetchReset says the fetcher lost its position on some source partition (an offset
// deleted under it; librdkafka does not say which partition): every partition was
// unassigned, and the caller checks the log start of the one it wanted.
var errFetchReset = errors.New("source fetch position deleted under the fetcher")

// fetcher reads source records by (topic, partition, offset) for the pointers of share
// groups' dead letters. It keeps the source partitions it has been asked for assigned,
// each at its own position, so that pointers alternating between partitions are served
// from records already read ahead rather than one fetch each; a pointer behind a
// partition's position, or far ahead of it, seeks. It is owned by the loop goroutine.
type fetcher struct {
	c     *kafka.Consumer
	parts map[partKey]*fetchPart
	wm    map[partKey]watermarks // cached, also for partitions no longer assigned
	seeks func()                 // counts a fetch (re)started at a new offset
}

type watermarks struct {
	low, high int64
	at        time.Time
}

// fetchPart is one assigned source partition. Every offset in [from, next) that is not in
// buf does not exist in the log (compacted away, a transaction marker).
type fetchPart struct {
	from, next int64
	buf        []*kafka.Message // ascending offsets, all in [from, next)
	bufBytes   int
	paused     bool
	used       time.Time
}

func newFetcher(c *kafka.Consumer, seeks func()) *fetcher {
	return &fetcher{c: c, parts: map[partKey]*fetchPart{}, wm: map[partKey]watermarks{}, seeks: seeks}
}

// watermarks returns the partition's log start and end, at most watermarksTTL old unless
// fresh is set.
func (f *fetcher) watermarks(topic string, partition int32, fresh bool) (low, high int64, err error) {
	k := partKey{topic, partition}
	if w, ok := f.wm[k]; ok && !fresh && time.Since(w.at) < watermarksTTL {
		return w.low, w.high, nil
	}
	low, high, err = f.c.QueryWatermarkOffsets(topic, partition, int(callTimeout/time.Millisecond))
	if err == nil {
		f.wm[k] = watermarks{low: low, high: high, at: time.Now()}
	}
	return low, high, err
}

// read returns the record at offset on topic/partition, or nil when the log holds none
// there (the end of the log is at or before it, or the offset was compacted away or is
// a transaction marker).
func (f *fetcher) read(topic string, partition int32, offset int64) (*kafka.Message, error) {
	f.evictIdle()
	k := partKey{topic, partition}
	fp := f.parts[k]
	tp := kafka.TopicPartition{Topic: &topic, Partition: partition, Offset: kafka.Offset(offset)}
	switch {
	case fp == nil:
		if err := f.c.IncrementalAssign([]kafka.TopicPartition{tp}); err != nil {
			return nil, err
		}
		// librdkafka keeps an application's pause of a partition across its unassignment
		// and a later assignment: one the fetcher let go of while its read-ahead was full
		// (idle, reset, the end of a run) would never be fetched again. A new fetchPart
		// is not paused; neither is the partition.
		if err := f.c.Resume([]kafka.TopicPartition{tp}); err != nil {
			_ = f.c.IncrementalUnassign([]kafka.TopicPartition{tp})
			return nil, err
		}
		fp = &fetchPart{from: offset, next: offset}
		f.parts[k] = fp
		f.seeks()
	case offset < fp.from || offset-fp.next > fetchSkipMax:
		if fp.paused {
			f.setPaused(k, fp, false)
		}
		if err := f.c.Seek(tp, 0); err != nil {
			f.forget(k)
			return nil, err
		}
		fp.buf, fp.bufBytes, fp.from, fp.next = nil, 0, offset, offset
		f.seeks()
	}
	fp.used = time.Now()
	f.dropBelow(fp, offset)
	if offset >= fp.next {
		if fp.paused {
			f.setPaused(k, fp, false)
		}
		if err := f.fill(k, fp, offset); err != nil {
			return nil, err
		}
	}
	f.dropBelow(fp, offset)
	var m *kafka.Message
	if len(fp.buf) > 0 && int64(fp.buf[0].TopicPartition.Offset) == offset {
		m = fp.buf[0]
		fp.buf[0] = nil
		fp.buf = fp.buf[1:]
		fp.bufBytes -= size(m)
		fp.from = offset + 1
	}
	if fp.paused && fp.bufBytes < fetchBufBytes/2 {
		f.setPaused(k, fp, false)
	}
	return m, nil
}

// dropBelow forgets the records below offset: pointers to a source partition come
// mostly in its order, and one behind the buffer seeks.
func (f *fetcher) dropBelow(fp *fetchPart, offset int64) {
	for len(fp.buf) > 0 && int64(fp.buf[0].TopicPartition.Offset) < offset {
		fp.bufBytes -= size(fp.buf[0])
		fp.buf[0] = nil
		fp.buf = fp.buf[1:]
	}
	fp.from = max(fp.from, offset)
}

// fill polls until the wanted partition's position is past offset, buffering what comes
// for the others.
func (f *fetcher) fill(want partKey, wfp *fetchPart, offset int64) error {
	deadline := time.Now().Add(callTimeout)
	var last error // librdkafka's latest complaint, for the timeout's message
	for wfp.next <= offset {
		if !time.Now().Before(deadline) {
			msg := "source record not fetched in time"
			if last != nil {
				msg += ": " + last.Error()
			}
			return kafka.NewError(kafka.ErrTimedOut, msg, false)
		}
		switch ev := f.c.Poll(100).(type) {
		case *kafka.Message:
			if err := ev.TopicPartition.Error; err != nil {
				if f.onFetchError(err) != nil {
					return errFetchReset
				}
				last = err
				continue
			}
			k := partKey{*ev.TopicPartition.Topic, ev.TopicPartition.Partition}
			fp := f.parts[k]
			o := int64(ev.TopicPartition.Offset)
			if fp == nil || o < fp.next {
				continue
			}
			fp.next = o + 1
			if o < fp.from {
				continue // read on the way to a pointer further on
			}
			fp.buf = append(fp.buf, ev)
			fp.bufBytes += size(ev)
			if !fp.paused && fp.bufBytes > fetchBufBytes && k != want {
				f.setPaused(k, fp, true)
			}
		case kafka.PartitionEOF:
			k := partKey{*ev.Topic, ev.Partition}
			fp := f.parts[k]
			if fp == nil {
				continue
			}
			fp.next = max(fp.next, int64(ev.Offset))
			if k == want && wfp.next <= offset {
				// The end of the log is at or before the pointer: unless records came
				// since this end was seen, it names no record.
				if _, high, err := f.watermarks(want.topic, want.partition, true); err == nil && high <= offset {
					return nil
				}
			}
		case kafka.Error:
			// Errors queued during an outage come out after it: only a lost position or
			// a fatal error ends the wait; librdkafka retries the rest by itself.
			if err := f.onFetchError(ev); err != nil {
				return err
			}
			if ev.IsFatal() {
				return ev
			}
			last = ev
		}
	}
	return nil
}

// onFetchError resets the fetcher and returns errFetchReset when a partition's position
// was deleted under it (with auto.offset.reset=error, librdkafka stops that partition and
// does not always say which); other errors are librdkafka's to retry: nil.
func (f *fetcher) onFetchError(err error) error {
	var ke kafka.Error
	if errors.As(err, &ke) && (ke.Code() == kafka.ErrOffsetOutOfRange || ke.Code() == kafka.ErrAutoOffsetReset) {
		var tps []kafka.TopicPartition
		for k := range f.parts {
			tps = append(tps, kafka.TopicPartition{Topic: &k.topic, Partition: k.partition})
		}
		_ = f.c.IncrementalUnassign(tps)
		clear(f.parts)
		return errFetchReset
	}
	return nil
}

// release unassigns every source partition and drops what was read ahead: the worker
// calls it at the end of a run, when no pointer is resolved until the next one.
func (f *fetcher) release() {
	if f == nil || len(f.parts) == 0 {
		return
	}
	for k := range f.parts {
		f.forget(k)
	}
}

// evictIdle unassigns the source partitions no pointer asked for within fetchIdle.
func (f *fetcher) evictIdle() {
	now := time.Now()
	for k, fp := range f.parts {
		if now.Sub(fp.used) > fetchIdle {
			f.forget(k)
		}
	}
	for k, w := range f.wm {
		if f.parts[k] == nil && now.Sub(w.at) > fetchIdle {
			delete(f.wm, k)
		}
	}
}

// forgetTopic unassigns topic's partitions and drops what was read of them.
func (f *fetcher) forgetTopic(topic string) {
	for k := range f.parts {
		if k.topic == topic {
			f.forget(k)
		}
	}
	for k := range f.wm {
		if k.topic == topic {
			delete(f.wm, k)
		}
	}
}

func (f *fetcher) forget(k partKey) {
	_ = f.c.IncrementalUnassign([]kafka.TopicPartition{{Topic: &k.topic, Partition: k.partition}})
	delete(f.parts, k)
	delete(f.wm, k)
}

func (f *fetcher) setPaused(k partKey, fp *fetchPart, pause bool) {
	tps := []kafka.TopicPartition{{Topic: &k.topic, Partition: k.partition}}
	var err error
	if pause {
		err = f.c.Pause(tps)
	} else {
		err = f.c.Resume(tps)
	}
	if err == nil {
		fp.paused = pause
	}
	if !pause {
		// Resume does not wake the broker thread, which sleeps up to a second while none
		// of its partitions is fetchable (see wakeFetcher): a request to the leader does.
		_, _, _ = f.watermarks(k.topic, k.partition, true)
	}
}

func size(m *kafka.Message) int {
	n := len(m.Key) + len(m.Value)
	for _, h := range m.Headers {
		n += len(h.Key) + len(h.Value)
	}
	return n
}

// close closes the fetcher's consumer; the loop calls it at shutdown.
func (f *fetcher) close() {
	if f != nil {
		_ = f.c.Close()
	}
}
