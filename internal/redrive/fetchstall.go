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
func (w *runner) watchFetches(r *runState, now time.Time) {
	held := w.throttle.on
	for _, p := range r.parts {
		next, _ := p.nextOffset()
		switch {
		case held || p.gone || !p.reading || p.paused:
			p.quietSince = time.Time{}
		case p.quietSince.IsZero() || next != p.quietAt:
			p.quietAt, p.quietSince = next, now
		case now.Sub(p.quietSince) >= fetchStallAfter:
			w.kickFetch(p, now.Sub(p.quietSince))
			p.quietSince = now
		}
	}
}

// nextOffset is the offset the run expects next from p, past the last record it took. It
// is unknown (false) before the first record of the worker's life when the assignment
// left the start to the group (its committed offset could not be read, or it has none):
// librdkafka starts where the group's committed offset or auto.offset.reset says.
func (p *partition) nextOffset() (int64, bool) {
	if p.trk == nil {
		return -1, false
	}
	return p.trk.Next(), true
}

// kickFetch routes and resumes p in librdkafka and seeks it to the next offset the run
// expects (the documented workaround), then wakes its fetcher. Where that offset is unknown it only
// resumes p: a seek to a guess would read records the group had done again.
func (w *runner) kickFetch(p *partition, quiet time.Duration) {
	next, known := p.nextOffset()
	tp := kafka.TopicPartition{Topic: &p.key.topic, Partition: p.key.partition}
	w.parts.route([]kafka.TopicPartition{tp})
	err := w.consumer.Resume([]kafka.TopicPartition{tp})
	w.parts.seekNext([]*partition{p})
	ev := p.log(w.log).Warn()
	if known {
		ev = ev.Int64("offset", next)
	}
	w.parts.wakeFetcher([]kafka.TopicPartition{tp})
	w.health.count("fetch_stall")
	ev.Err(err).Dur("quiet_ms", quiet).Bool("sought", known).
		Msg("partition handed out nothing while the run reads it; kicked it (resumed, and sought when its next offset is known)")
}
