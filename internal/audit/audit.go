// Package audit checks the conservation law of a DLQ topic and its redrive consumer group:
// every DLQ record below the group's committed offsets is found on its original topic (by
// the redrive id header) or has its row in PostgreSQL (scheduled, parked, or a later state);
// every row replayed is found on its replay's target (by the replay id header); and the
// ledger shows no range that was never read (records deleted before they were read,
// offsets that jumped over records).
package audit

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/dlqops/dlq/internal/headers"
	"github.com/dlqops/dlq/internal/kafkaclient"
	"github.com/dlqops/dlq/internal/routes"
	"github.com/dlqops/dlq/internal/store"
)

// Report is the outcome of an audit.
type Report struct {
	Topic, Group string
	// Checked counts the DLQ records below the committed offsets.
	Checked int
	// OnTarget counts checked records found on their target and not in PostgreSQL.
	OnTarget int
	// InStore counts checked records by their PostgreSQL status.
	InStore map[store.Status]int
	// Missing are checked records found nowhere: lost.
	Missing []store.Coordinates
	// Duplicated are records found more than once on their target, with the copy count
	// (at-least-once: a crash between produce and commit redrives again).
	Duplicated map[store.Coordinates]int
	// Replays counts the operator replays found on the targets read (records with a
	// dlq-replay-id): a replay is not a copy of a redrive, whatever else it carries.
	Replays int
	// Replayed counts the rows PostgreSQL says were replayed; ReplaysMissing are those whose
	// replay id is on no record of their target: lost after the replay.
	Replayed       int
	ReplaysMissing []store.Coordinates
	// Lost are the ranges the ledger shows were never read.
	Lost []LostRange
	// Unproven are partitions with a committed offset the ledger does not know: records
	// deleted there before they were read cannot be seen.
	Unproven []int32
}

// OK reports whether nothing is missing or lost.
func (r Report) OK() bool {
	return len(r.Missing) == 0 && len(r.Lost) == 0 && len(r.ReplaysMissing) == 0
}

// Err is nil when the report is OK, else an error counting what is missing or lost.
func (r Report) Err() error {
	if r.OK() {
		return nil
	}
	return fmt.Errorf("%d DLQ records are missing, %d offset ranges were never read, %d replays are missing",
		len(r.Missing), len(r.Lost), len(r.ReplaysMissing))
}

func (r Report) String() string {
	s := fmt.Sprintf("topic %s group %s: %d records below the committed offsets: %d on their target, %d in PostgreSQL %v; %d missing, %d duplicated, %d lost ranges; %d rows replayed, %d replays on the targets, %d replays missing",
		r.Topic, r.Group, r.Checked, r.OnTarget, sum(r.InStore), r.InStore, len(r.Missing), len(r.Duplicated), len(r.Lost),
		r.Replayed, r.Replays, len(r.ReplaysMissing))
	s += listed("missing", r.Missing)
	s += listed("replay missing", r.ReplaysMissing)
	dups := make([]store.Coordinates, 0, len(r.Duplicated))
	for c := range r.Duplicated {
		dups = append(dups, c)
	}
	sortCoordinates(dups)
	for i, c := range dups {
		if i == 20 {
			s += fmt.Sprintf("\n  ... and %d more", len(dups)-20)
			break
		}
		s += fmt.Sprintf("\n  duplicated %s/%d/%d: %d copies", c.Topic, c.Partition, c.Offset, r.Duplicated[c])
	}
	for _, l := range r.Lost {
		s += "\n  lost " + l.String()
	}
	if len(r.Unproven) > 0 {
		s += fmt.Sprintf("\n  partitions %v: committed offsets the ledger does not know; records deleted there before they were read cannot be seen", r.Unproven)
	}
	return s
}

// listed prints up to 20 coordinates, one per line.
func listed(what string, cs []store.Coordinates) string {
	s := ""
	for i, c := range cs {
		if i == 20 {
			return s + fmt.Sprintf("\n  ... and %d more", len(cs)-20)
		}
		s += fmt.Sprintf("\n  %s %s/%d/%d", what, c.Topic, c.Partition, c.Offset)
	}
	return s
}

func sortCoordinates(cs []store.Coordinates) {
	sort.Slice(cs, func(i, j int) bool {
		a, b := cs[i], cs[j]
		return a.Partition < b.Partition || a.Partition == b.Partition && a.Offset < b.Offset
	})
}

func sum(m map[store.Status]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// timeout bounds each Kafka call; reading a topic may take longer in total.
const timeout = 30 * time.Second

// Store is what the audit reads: the stored records of a DLQ topic (store.AuditLog) and
// the ledger's gaps and positions (store.Ledger).
type Store interface {
	DLQRows(ctx context.Context, dlqTopic string) (map[store.Coordinates]store.AuditRow, error)
	LedgerGaps(ctx context.Context, group, topic string) ([]store.Gap, error)
	LedgerPositions(ctx context.Context, group string) ([]store.Coordinates, error)
}

// Option widens what Run reads.
type Option func(*options)

type options struct {
	groupTopics []string // group_topic_template of the route
}

// WithGroupTopics makes Run look for redriven records on the failing groups' own topics
// too, named by template (a route's group_topic_template): a route that redrives to them
// (redrive_to group_topic) puts its records there, not on their original topic.
func WithGroupTopics(template string) Option {
	return func(o *options) { o.groupTopics = append(o.groupTopics, template) }
}

// Run audits dlqTopic for group.
func Run(ctx context.Context, kcfg kafkaclient.Config, st Store, dlqTopic, group string, opts ...Option) (Report, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	rep := Report{Topic: dlqTopic, Group: group, InStore: map[store.Status]int{}, Duplicated: map[store.Coordinates]int{}}
	if dlqTopic == "" || group == "" {
		return rep, fmt.Errorf("audit: a DLQ topic and a consumer group are required")
	}
	ends, err := committed(kcfg, dlqTopic, group)
	if err != nil {
		return rep, err
	}
	rows, err := st.DLQRows(ctx, dlqTopic)
	if err != nil {
		return rep, fmt.Errorf("audit: read PostgreSQL: %w", err)
	}
	targets := map[string]bool{}
	replays := map[string]store.Coordinates{} // replay id → the DLQ record it replayed
	for c, row := range rows {
		if row.Status == store.StatusReplayed && row.ReplayID != "" {
			rep.Replayed++
			replays[row.ReplayID] = c
			targets[row.TargetTopic] = true
		}
	}
	var pending []store.Coordinates // checked, not in PostgreSQL: must be on a target
	err = read(ctx, kcfg, dlqTopic, ends, func(m *kafka.Message) {
		c := store.Coordinates{Topic: dlqTopic, Partition: m.TopicPartition.Partition, Offset: int64(m.TopicPartition.Offset)}
		rep.Checked++
		if row, ok := rows[c]; ok {
			rep.InStore[row.Status]++
			return
		}
		pending = append(pending, c)
		env := headers.DecodeOf(m.Headers).Envelope
		if t := env.OriginalTopic; headers.ValidTopicName(t) {
			targets[t] = true
			for _, template := range o.groupTopics {
				if g := routes.GroupTopic(template, t, env.Group); env.Group != "" && headers.ValidTopicName(g) {
					targets[g] = true
				}
			}
		}
	})
	if err != nil {
		return rep, err
	}
	copies := map[store.Coordinates]int{}
	replayCopies := map[string]int{}
	for t := range targets {
		if err := read(ctx, kcfg, t, nil, func(m *kafka.Message) {
			env := headers.DecodeOf(m.Headers).Envelope
			switch {
			case env.Replay != nil && env.Replay.ReplayID != "":
				// Replays written before they dropped the redrive id still carry one.
				rep.Replays++
				replayCopies[env.Replay.ReplayID]++
			case env.RedriveID != nil && env.RedriveID.Topic == dlqTopic:
				copies[store.Coordinates(*env.RedriveID)]++
			}
		}); err != nil {
			return rep, err
		}
	}
	for _, c := range pending {
		switch n := copies[c]; {
		case n == 0:
			rep.Missing = append(rep.Missing, c)
		case n > 1:
			rep.Duplicated[c] = n
			rep.OnTarget++
		default:
			rep.OnTarget++
		}
	}
	for id, c := range replays {
		// A retry of the same replay keeps its id: at-least-once, like a redrive.
		switch n := replayCopies[id]; {
		case n == 0:
			rep.ReplaysMissing = append(rep.ReplaysMissing, c)
		case n > 1:
			rep.Duplicated[c] = n
		}
	}
	sortCoordinates(rep.ReplaysMissing)
	if rep.Lost, rep.Unproven, err = fromLedger(ctx, kcfg, st, dlqTopic, group, ends); err != nil {
		return rep, err
	}
	sortCoordinates(rep.Missing)
	return rep, nil
}

// committed returns the group's committed offset of each partition of topic (0 when none).
func committed(kcfg kafkaclient.Config, topic, group string) (map[int32]int64, error) {
	cc := kafkaclient.ConsumerConfig(kcfg, group)
	cc["enable.auto.commit"] = false
	c, err := kafka.NewConsumer(&cc)
	if err != nil {
		return nil, fmt.Errorf("audit: consumer: %w", err)
	}
	defer c.Close()
	md, err := c.GetMetadata(&topic, false, int(timeout/time.Millisecond))
	if err != nil {
		return nil, fmt.Errorf("audit: metadata of %s: %w", topic, err)
	}
	tm := md.Topics[topic]
	if tm.Error.Code() != kafka.ErrNoError {
		return nil, fmt.Errorf("audit: topic %s: %w", topic, tm.Error)
	}
	tps := make([]kafka.TopicPartition, len(tm.Partitions))
	for i, p := range tm.Partitions {
		tps[i] = kafka.TopicPartition{Topic: &topic, Partition: p.ID}
	}
	got, err := c.Committed(tps, int(timeout/time.Millisecond))
	if err != nil {
		return nil, fmt.Errorf("audit: committed offsets of %s: %w", group, err)
	}
	out := map[int32]int64{}
	for _, tp := range got {
		out[tp.Partition] = max(0, int64(tp.Offset))
	}
	return out, nil
}

// read calls fn for every record of topic below ends[partition] (the high watermark of
// every partition when ends is nil).
func read(ctx context.Context, kcfg kafkaclient.Config, topic string, ends map[int32]int64, fn func(*kafka.Message)) error {
	cc := kafkaclient.ConsumerConfig(kcfg, "dlq-audit")
	cc["enable.auto.commit"] = false
	c, err := kafka.NewConsumer(&cc)
	if err != nil {
		return fmt.Errorf("audit: consumer: %w", err)
	}
	defer c.Close()
	if ends == nil {
		md, err := c.GetMetadata(&topic, false, int(timeout/time.Millisecond))
		if err != nil {
			return fmt.Errorf("audit: metadata of %s: %w", topic, err)
		}
		ends = map[int32]int64{}
		for _, p := range md.Topics[topic].Partitions {
			_, high, err := c.QueryWatermarkOffsets(topic, p.ID, int(timeout/time.Millisecond))
			if err != nil {
				return fmt.Errorf("audit: watermarks of %s/%d: %w", topic, p.ID, err)
			}
			ends[p.ID] = high
		}
	}
	var tps []kafka.TopicPartition
	left := map[int32]int64{}
	for p, end := range ends {
		low, high, err := c.QueryWatermarkOffsets(topic, p, int(timeout/time.Millisecond))
		if err != nil {
			return fmt.Errorf("audit: watermarks of %s/%d: %w", topic, p, err)
		}
		if end = min(end, high); end > low {
			tps = append(tps, kafka.TopicPartition{Topic: &topic, Partition: p, Offset: kafka.Offset(low)})
			left[p] = end
		}
	}
	if len(tps) == 0 {
		return nil
	}
	if err := c.Assign(tps); err != nil {
		return fmt.Errorf("audit: assign %s: %w", topic, err)
	}
	idle := time.Now()
	for len(left) > 0 {
		if err := ctx.Err(); err != nil {
			return err
		}
		switch ev := c.Poll(100).(type) {
		case *kafka.Message:
			idle = time.Now()
			p := ev.TopicPartition.Partition
			end, ok := left[p]
			if !ok || int64(ev.TopicPartition.Offset) >= end {
				continue
			}
			fn(ev)
			if int64(ev.TopicPartition.Offset)+1 >= end {
				delete(left, p)
			}
		case kafka.Error:
			if ev.IsFatal() {
				return fmt.Errorf("audit: read %s: %w", topic, ev)
			}
		default:
			// Transaction markers can hide the last offsets below the end: a partition that
			// stays silent for long enough is complete.
			if time.Since(idle) > 5*time.Second {
				return nil
			}
		}
	}
	return nil
}
