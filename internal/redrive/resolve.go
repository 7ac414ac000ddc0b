package redrive

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/dlqops/dlq/internal/delivery"
	"github.com/dlqops/dlq/internal/headers"
	"github.com/dlqops/dlq/internal/kafkaclient"
	"github.com/dlqops/dlq/internal/store"
)

// ReasonSourceUnavailable parks a share group's dead letter whose source record no
// longer exists (retention, DeleteRecords, compaction, a deleted topic) or whose
// coordinates now name another record (a topic re-created since): the pointer is kept
// with its coordinates, and its copy of the record when the group made one.
const ReasonSourceUnavailable = store.ReasonSourceUnavailable

// isPointer reports whether d is a share group's dead letter (KIP-1191). Those are always
// resolved from the source, even when the group copied the record: a copy has none of
// the source's headers (our retry count among them), and an oversized copy is silently
// dropped by the broker, which leaves key and value null like a real tombstone.
func isPointer(d headers.Decoded) bool {
	return d.Problem == nil && d.Envelope.Convention == headers.ConventionShareGroup
}

// resolvePointer replaces a share group's dead letter m by the source record it points
// at: same DLQ position, the source's key, value, timestamp and headers, and our headers
// carrying the pointer's routing, and the decoder's warnings about the source's headers
// (the caller notes them with the pointer's). It returns a nil record when it handled m
// itself: parked (the source is unavailable, the record found there cannot be the one
// the group rejected, or its retry count is invalid) or stalled (the cluster does not
// answer; m is read again).
func (w *walk) resolvePointer(p *partition, m *kafka.Message, dec headers.Decoded) (*kafka.Message, headers.Decoded, []headers.Warning) {
	w.headroom.off = false // a share-group DLQ after all: its backlog is probed
	e := dec.Envelope
	src, gone, low, _, err := w.sources.fetch(e.OriginalTopic, e.OriginalPartition, e.OriginalOffset, m.Timestamp)
	if err == nil && gone == "" {
		gone = notTheDeadOne(m, src)
	}
	log := w.log.With().Str("topic", e.OriginalTopic).Int32("partition", e.OriginalPartition).Int64("offset", e.OriginalOffset).
		Str("dlq_topic", p.key.topic).Int32("dlq_partition", p.key.partition).Int64("dlq_offset", int64(m.TopicPartition.Offset)).Logger()
	switch {
	case err != nil:
		w.health.stall("source_fetch", err, "cannot fetch the source record of a share group's dead letter; partition stalled")
		w.parts.rewind(m)
		p.reading = false
		w.requeueRead(p)
		return nil, dec, nil
	case gone != "":
		log.Warn().Str("detail", gone).Int64("source_log_start", low).Msg("source record unavailable: dead letter parked source_unavailable")
		e.ErrorMessage = "source unavailable: " + gone + "; " + e.ErrorMessage + shareOrigin(e)
		w.parkAsRead(p, m, e, ReasonSourceUnavailable, gone)
		return nil, dec, nil
	}
	sd := headers.DecodeOf(src.Headers)
	if sd.Problem != nil && sd.Problem.Reason == headers.ReasonInvalidRetryCount {
		r := *src
		r.TopicPartition = m.TopicPartition
		w.parkAsRead(p, &r, e, store.ReasonInvalidRetryCount, sd.Problem.Detail)
		return nil, dec, sd.Warnings
	}
	// The source's own envelope (a record we redrove before carries our retry count),
	// routed by the pointer and described by the broker. A record we redrove before
	// keeps its first hop's coordinates, the original failure's, as every convention
	// does; the pointer's are those of its latest copy. Coordinates are never mixed: ours
	// are kept only when they name a partition and an offset.
	env := sd.Envelope
	if sd.Envelope.Convention != headers.ConventionOurs || env.OriginalTopic != e.OriginalTopic ||
		env.OriginalPartition < 0 || env.OriginalOffset < 0 {
		env.OriginalTopic, env.OriginalPartition, env.OriginalOffset = e.OriginalTopic, e.OriginalPartition, e.OriginalOffset
		env.OriginalTimestamp = src.Timestamp
	}
	env.ErrorClass = ""
	env.ErrorMessage = e.ErrorMessage + shareOrigin(e)
	if e.Group != "" {
		env.Group = e.Group // the share group failed it last
	}
	env.LastFailure = m.Timestamp.UTC().Truncate(time.Millisecond) // the broker wrote the dead letter when it gave up
	if env.FirstFailure.IsZero() {
		env.FirstFailure = env.LastFailure
	}
	r := &kafka.Message{TopicPartition: m.TopicPartition, Key: src.Key, Value: src.Value, Timestamp: src.Timestamp,
		TimestampType: src.TimestampType, Headers: headers.EncodeAs[kafka.Header](src.Headers, env, headers.EncodeOptions{})}
	return r, headers.DecodeOf(r.Headers), sd.Warnings
}

// shareOrigin is the group and delivery count a share group's dead letter names, as
// every row of one carries them in its error message.
func shareOrigin(e headers.Envelope) string {
	return " (share group " + e.ShareGroup + ", delivery count " + strconv.Itoa(e.DeliveryCount) + ")"
}

// notTheDeadOne says why src, the record at the coordinates of the dead letter dl, cannot
// be the record the group rejected ("" when it can be): the group's copy of that record
// differs from it, or it is newer than the dead letter (a record is always written
// before the dead letter a group writes for it). Both happen once the topic was deleted
// and re-created and an unrelated record took the offset.
func notTheDeadOne(dl, src *kafka.Message) string {
	offset := int64(src.TopicPartition.Offset)
	if (dl.Key != nil || dl.Value != nil) && (!bytes.Equal(dl.Key, src.Key) || !bytes.Equal(dl.Value, src.Value)) {
		return fmt.Sprintf("the record at offset %d differs from the group's copy of the record it rejected (topic re-created?)", offset)
	}
	if src.Timestamp.UnixMilli() > 0 && dl.Timestamp.UnixMilli() > 0 && src.Timestamp.After(dl.Timestamp) {
		return fmt.Sprintf("the record at offset %d (timestamp %s) is newer than the dead letter (%s) (topic re-created?)", offset,
			src.Timestamp.UTC().Format(headers.TimeLayout), dl.Timestamp.UTC().Format(headers.TimeLayout))
	}
	return ""
}

// parkAsRead parks m, a record read from the DLQ at p, with reason.
func (w *walk) parkAsRead(p *partition, m *kafka.Message, e headers.Envelope, reason store.Reason, detail string) {
	mustAdd(p, m)
	w.inFlight++
	w.park.enqueue(p, m, e, decision{act: actPark, reason: reason, detail: detail})
}

// topicIDStore records the source topics' ids (store.Runs).
type topicIDStore interface {
	SightTopicID(ctx context.Context, topic, id string) (store.TopicSighting, error)
}

var _ topicIDStore = (*store.Runs)(nil)

// sources reads the records that share groups' dead letters point at, through a fetcher
// created on first use: most routes never read one. Owned by the loop goroutine.
type sources struct {
	kafka    kafkaclient.Config
	group    string // the route's; the fetcher's client is group.source-fetch
	clientID string
	route    string
	topics   *delivery.Topics // the loop's topic cache: partition counts
	store    topicIDStore     // where the source topics' ids are recorded
	seeks    *prometheus.CounterVec
	f        *fetcher  // nil until needed
	ids      *topicIDs // created with f
}

// fetch reads the record at topic/partition/offset for a dead letter written at written.
// gone says why it no longer exists ("" when it does), the topic's re-creation since
// included; low and high are the partition's watermarks; err is a failure worth
// retrying.
func (s *sources) fetch(topic string, partition int32, offset int64, written time.Time) (m *kafka.Message, gone string, low, high int64, err error) {
	partitions, err := s.topics.Partitions(topic)
	switch {
	case err != nil:
		return nil, "", 0, 0, err
	case partitions == 0:
		return nil, "topic " + topic + " does not exist", 0, 0, nil
	case partition < 0 || offset < 0:
		return nil, "the dead letter names no partition or offset", 0, 0, nil
	case partition >= partitions:
		return nil, fmt.Sprintf("topic %s has no partition %d", topic, partition), 0, 0, nil
	}
	f, err := s.fetcher()
	if err != nil {
		return nil, "", 0, 0, err
	}
	recreated, changed, err := s.ids.recreated(topic, written)
	if changed {
		f.forgetTopic(topic) // what it read ahead is the old topic's
	}
	switch {
	case err != nil:
		return nil, "", 0, 0, err
	case recreated != "":
		return nil, recreated, 0, 0, nil
	}
	// A cached log start is never above the real one: below it, the record is gone.
	if low, high, err = f.watermarks(topic, partition, false); err != nil {
		return nil, "", 0, 0, err
	}
	if offset < low {
		return nil, fmt.Sprintf("offset %d is below the log start %d (retention or deleted records)", offset, low), low, high, nil
	}
	m, err = f.read(topic, partition, offset)
	if errors.Is(err, errFetchReset) {
		// Deleted under the fetcher: this partition's, or another's; once more from a
		// fresh log start.
		if low, high, err = f.watermarks(topic, partition, true); err != nil {
			return nil, "", 0, 0, err
		}
		if offset < low {
			return nil, fmt.Sprintf("offset %d is below the log start %d (retention or deleted records)", offset, low), low, high, nil
		}
		m, err = f.read(topic, partition, offset)
		if errors.Is(err, errFetchReset) {
			return nil, fmt.Sprintf("offset %d was deleted while it was read", offset), low, high, nil
		}
	}
	if err != nil {
		return nil, "", low, high, err
	}
	if m != nil {
		return m, "", low, high, nil
	}
	if low, high, err = f.watermarks(topic, partition, true); err != nil {
		return nil, "", 0, 0, err
	}
	if offset >= high {
		return nil, fmt.Sprintf("offset %d is beyond the end of the log %d (topic re-created?)", offset, high), low, high, nil
	}
	return nil, fmt.Sprintf("no record at offset %d (compacted away, or a transaction marker)", offset), low, high, nil
}

// release ends a run's reading of sources: the fetcher drops its partitions, and every
// source topic's id is asked again at its first dead letter of the next run, so that a
// topic re-created between two runs is seen as such.
func (s *sources) release() {
	s.f.release()
	if s.ids != nil {
		s.ids.expire()
	}
}

// fetcher returns the fetcher, created on first use.
func (s *sources) fetcher() (*fetcher, error) {
	if s.f != nil {
		return s.f, nil
	}
	// Assigned, never subscribed, never committing: the group id is a formality of the
	// client and no group is joined.
	cc := kafkaclient.ConsumerConfig(s.kafka, s.group+".source-fetch")
	cc["enable.auto.commit"] = false
	cc["enable.partition.eof"] = true
	cc["auto.offset.reset"] = "error" // a deleted offset is an error, never a jump elsewhere
	// The pointer names the exact record the group was given, whatever its transaction.
	cc["isolation.level"] = "read_uncommitted"
	cc["queued.max.messages.kbytes"] = 1024
	// A fetch that reaches the end of a partition waits no longer than this for more: a
	// pointer seeking elsewhere waits for the fetch in flight.
	cc["fetch.wait.max.ms"] = 50
	cc["client.id"] = s.clientID + "-source-fetch"
	c, err := kafka.NewConsumer(&cc)
	if err != nil {
		return nil, fmt.Errorf("route %s: source fetcher: %w", s.route, err)
	}
	a, err := kafka.NewAdminClientFromConsumer(c)
	if err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("route %s: source fetcher: %w", s.route, err)
	}
	s.ids = newTopicIDs(func(topic string) (kafka.UUID, bool, error) { return describeTopicID(a, topic) },
		func(topic, id string) (store.TopicSighting, error) {
			ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
			defer cancel()
			return s.store.SightTopicID(ctx, topic, id)
		})
	s.f = newFetcher(c, s.seeks.WithLabelValues(s.route).Inc)
	return s.f, nil
}
