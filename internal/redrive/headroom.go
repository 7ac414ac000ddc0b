package redrive

import (
	"time"

	"github.com/dlqops/dlq/internal/headers"
)

// headroomWarnShare is the share of a source partition's retained records below which the
// oldest unresolved pointer is close enough to the log start to warn: its source record
// may expire before the DLQ backlog reaches it.
const headroomWarnShare = 0.1

// headroomKind is the warnEvery kind of the low-headroom warning.
const headroomKind = "source_headroom"

// probeHeadroom measures, every e.headroomEvery, how close the DLQ backlog of share-group
// pointers is to its sources' retention: for each assigned DLQ partition it reads the
// first record not yet done (the oldest unresolved one) and, when it is a pointer, sets
// dlq_worker_source_headroom_records{topic,partition} of its source partition to the
// pointer's source offset minus that partition's log start (the smallest over the DLQ
// partitions; negative when the source record is already gone). A source partition with
// no unresolved pointer has no series. A probe that finds records but no pointer stops
// the probes until the route resolves one: most routes never see a share group's dead
// letter. It runs on the loop, whose fetcher it uses.
func (w *worker) probeHeadroom() {
	now := time.Now()
	if w.headroomOff || now.Before(w.headroomAt) || len(w.parts.byKey) == 0 {
		return
	}
	w.headroomAt = now.Add(w.e.headroomEvery)
	f, err := w.sourceFetcher()
	if err != nil {
		return
	}
	type oldest struct {
		headroom, offset, low, high int64
		dlq                         partKey
		dlqOffset                   int64
	}
	found := map[partKey]oldest{}
	seen := false // a record was there to look at
	for _, p := range w.parts.byKey {
		if p.gone {
			continue
		}
		low, high, err := f.watermarks(p.key.topic, p.key.partition, true)
		if err != nil {
			w.health.warnEvery("headroom", err, "cannot probe the oldest share-group dead letter; the headroom gauge is not updated")
			return
		}
		start := low
		if p.trk != nil {
			start = max(low, p.trk.Watermark())
		}
		if start >= high {
			continue
		}
		m, err := f.read(p.key.topic, p.key.partition, start)
		f.forget(p.key) // a DLQ partition is read once here, never resolved from
		if err != nil {
			w.health.warnEvery("headroom", err, "cannot probe the oldest share-group dead letter; the headroom gauge is not updated")
			return
		}
		if m == nil {
			continue
		}
		seen = true
		dec := headers.DecodeOf(m.Headers)
		if !isPointer(dec) {
			continue
		}
		e := dec.Envelope
		src := partKey{e.OriginalTopic, e.OriginalPartition}
		slow, shigh, err := f.watermarks(src.topic, src.partition, true)
		if err != nil {
			continue // a deleted source topic: the pointer is parked when it is read
		}
		h := oldest{headroom: e.OriginalOffset - slow, offset: e.OriginalOffset, low: slow, high: shigh, dlq: p.key, dlqOffset: start}
		if o, ok := found[src]; !ok || h.headroom < o.headroom {
			found[src] = h
		}
	}
	w.headroomOff = seen && len(found) == 0
	for k := range w.headroomSeries {
		if _, ok := found[k]; !ok {
			w.e.metrics.sourceHeadroom.DeleteLabelValues(w.route.Name, k.topic, partitionLabel(k.partition))
			delete(w.headroomSeries, k)
		}
	}
	for k, o := range found {
		w.e.metrics.sourceHeadroom.WithLabelValues(w.route.Name, k.topic, partitionLabel(k.partition)).Set(float64(o.headroom))
		w.headroomSeries[k] = true
		// Only once the source has started deleting (its log start moved) is a small
		// headroom a race with retention; the first record of a young topic has none.
		if o.low > 0 && float64(o.headroom) < headroomWarnShare*float64(o.high-o.low) && w.health.warnDue(headroomKind) {
			w.log.Warn().Str("kind", headroomKind).Str("topic", k.topic).Int32("partition", k.partition).Int64("offset", o.offset).
				Int64("source_log_start", o.low).Int64("source_log_end", o.high).Int64("headroom_records", o.headroom).
				Str("dlq_topic", o.dlq.topic).Int32("dlq_partition", o.dlq.partition).Int64("dlq_offset", o.dlqOffset).
				Msg("the oldest unresolved share-group dead letter is close to its source's log start: it may expire before it is redriven")
		}
	}
}
