package redrive

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/dlqops/dlq/internal/headers"
)

// headroomWarnShare is the share of a source partition's retained records below which the
// oldest unresolved pointer is close enough to the log start to warn: its source record
// may expire before the DLQ backlog reaches it.
const headroomWarnShare = 0.1

// headroomKind is the warnEvery kind of the low-headroom warning.
const headroomKind = "source_headroom"

// headroom probes the share-group pointers' headroom; owned by the loop goroutine, whose
// source fetcher it uses.
type headroom struct {
	every   time.Duration
	route   string
	gauge   *prometheus.GaugeVec // dlq_worker_source_headroom_records{route,topic,partition}
	log     zerolog.Logger
	health  *health
	sources *sources

	at     time.Time        // the next probe
	series map[partKey]bool // the source partitions it set a gauge for
	off    bool             // no probe until a pointer is resolved (see probe)
}

// probe measures, every hr.every, how close the DLQ backlog of share-group
// pointers is to its sources' retention: for each assigned DLQ partition it reads the
// first record not yet done (the oldest unresolved one) and, when it is a pointer, sets
// dlq_worker_source_headroom_records{topic,partition} of its source partition to the
// pointer's source offset minus that partition's log start (the smallest over the DLQ
// partitions; negative when the source record is already gone). A source partition with
// no unresolved pointer has no series. A probe that finds records but no pointer stops
// the probes until the route resolves one: most routes never see a share group's dead
// letter. It runs on the loop, whose fetcher it uses.
func (hr *headroom) probe(parts *partitions) {
	now := time.Now()
	if hr.off || now.Before(hr.at) || len(parts.byKey) == 0 {
		return
	}
	hr.at = now.Add(hr.every)
	f, err := hr.sources.fetcher()
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
	for _, p := range parts.byKey {
		if p.gone {
			continue
		}
		low, high, err := f.watermarks(p.key.topic, p.key.partition, true)
		if err != nil {
			hr.health.warnEvery("headroom", err, "cannot probe the oldest share-group dead letter; the headroom gauge is not updated")
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
			hr.health.warnEvery("headroom", err, "cannot probe the oldest share-group dead letter; the headroom gauge is not updated")
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
	hr.off = seen && len(found) == 0
	for k := range hr.series {
		if _, ok := found[k]; !ok {
			hr.gauge.DeleteLabelValues(hr.route, k.topic, partitionLabel(k.partition))
			delete(hr.series, k)
		}
	}
	for k, o := range found {
		hr.gauge.WithLabelValues(hr.route, k.topic, partitionLabel(k.partition)).Set(float64(o.headroom))
		hr.series[k] = true
		// Only once the source has started deleting (its log start moved) is a small
		// headroom a race with retention; the first record of a young topic has none.
		if o.low > 0 && float64(o.headroom) < headroomWarnShare*float64(o.high-o.low) && hr.health.warnDue(headroomKind) {
			hr.log.Warn().Str("kind", headroomKind).Str("topic", k.topic).Int32("partition", k.partition).Int64("offset", o.offset).
				Int64("source_log_start", o.low).Int64("source_log_end", o.high).Int64("headroom_records", o.headroom).
				Str("dlq_topic", o.dlq.topic).Int32("dlq_partition", o.dlq.partition).Int64("dlq_offset", o.dlqOffset).
				Msg("the oldest unresolved share-group dead letter is close to its source's log start: it may expire before it is redriven")
		}
	}
}
