// The fetch watch: a partition the run reads that librdkafka stopped fetching is resumed
// and sought again, instead of holding the run open forever.

package redrive

import (
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
)

// fetchStallAfter is how long a partition the run reads may take no record, while
// neither it nor the throttle holds it back, before the worker kicks it. librdkafka
// answers a resumed partition within its one-second fetch wake-up, or with an error.
const fetchStallAfter = 10 * time.Second

// watchFetches kicks each partition run r reads whose next expected offset did not move
// for fetchStallAfter while resumed (a record handed out is either processed, which moves
// it, or held by the throttle, paused or not read: none of which is quiet). librdkafka
// can lose a resume or an assigned offset when an assignment, a pause and a resume follow
// each other closely (librdkafka#2190, #5591): the partition is never fetched again, with
// no error, and the run would wait for it forever. It runs on the loop.
func (w *worker) watchFetches(r *runState, now time.Time) {
	held := w.throttle.on
	for _, p := range r.parts {
		next := p.nextOffset()
		switch {
		case held || p.gone || !p.reading || p.paused:
			p.quietSince = time.Time{}
		case p.quietSince.IsZero() || next != p.quietAt:
			p.quietAt, p.quietSince = next, now
		case now.Sub(p.quietSince) >= fetchStallAfter:
			w.kickFetch(p, next, now.Sub(p.quietSince))
			p.quietSince = now
		}
	}
}

// nextOffset is the offset the run expects next from p: past the last record it took, or
// where the run started on it when it took none yet.
func (p *partition) nextOffset() int64 {
	if p.trk == nil {
		return p.from
	}
	return p.trk.Next()
}

// kickFetch resumes p in librdkafka and seeks it to next (the documented workaround),
// then wakes its fetcher.
func (w *worker) kickFetch(p *partition, next int64, quiet time.Duration) {
	tp := kafka.TopicPartition{Topic: &p.key.topic, Partition: p.key.partition, Offset: kafka.Offset(next)}
	err := w.consumer.Resume([]kafka.TopicPartition{tp})
	if err == nil {
		err = w.consumer.Seek(tp, 0)
	}
	w.parts.wakeFetcher([]kafka.TopicPartition{tp})
	w.health.count("fetch_stall")
	p.log(w.log).Warn().Err(err).Int64("offset", next).Dur("quiet_ms", quiet).
		Msg("partition handed out nothing while the run reads it: resumed and sought again")
}
