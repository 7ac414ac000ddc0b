package audit

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/dlqops/dlq/internal/config"
	"github.com/dlqops/dlq/internal/kafkaclient"
)

// What the ledger check finds, besides the gaps the worker recorded (store.GapCause).
const (
	// CauseUnread: the committed offset is ahead of where the ledger says the group
	// committed; the records between were never read (a forward jump the worker has not
	// rewound yet, or a commit it did not make).
	CauseUnread = "committed_ahead_of_ledger"
	// CauseDeletedUnread: records above the committed offset are below the log start:
	// deleted before anyone read them.
	CauseDeletedUnread = "deleted_unread"
)

// LostRange is a range [From, To) of a DLQ partition that was never read: its records
// are lost (a range still in the log also lists its records in Missing).
type LostRange struct {
	Partition int32
	From, To  int64
	Cause     string
}

func (l LostRange) String() string {
	return fmt.Sprintf("partition %d offsets [%d, %d) %d records: %s", l.Partition, l.From, l.To, l.To-l.From, l.Cause)
}

// fromLedger returns what the ledger shows was never read on topic by group: the lost
// gaps the worker recorded, the ranges between the ledger's position and a committed
// offset ahead of it, and the records deleted above the committed offset. committed has
// every partition (0 when nothing is committed). unproven are the partitions with a
// committed offset the ledger does not know (committed before the ledger existed).
func fromLedger(ctx context.Context, kcfg config.Kafka, st Store, topic, group string, committed map[int32]int64) (lost []LostRange, unproven []int32, err error) {
	gaps, err := st.LedgerGaps(ctx, group, topic)
	if err != nil {
		return nil, nil, fmt.Errorf("audit: read the ledger gaps: %w", err)
	}
	for _, g := range gaps {
		if g.Lost {
			lost = append(lost, LostRange{Partition: g.Partition, From: g.From, To: g.To, Cause: string(g.Cause)})
		}
	}
	all, err := st.LedgerPositions(ctx, group)
	if err != nil {
		return nil, nil, fmt.Errorf("audit: read the ledger positions: %w", err)
	}
	pos := map[int32]int64{}
	for _, c := range all {
		if c.Topic == topic {
			pos[c.Partition] = c.Offset
		}
	}
	lows, err := logStarts(kcfg, topic, committed)
	if err != nil {
		return nil, nil, err
	}
	for p, c := range committed {
		ledger, known := pos[p]
		switch {
		case known && c > ledger:
			lost = append(lost, LostRange{Partition: p, From: ledger, To: c, Cause: CauseUnread})
		case !known && c > 0:
			unproven = append(unproven, p)
		}
		if lows[p] > c {
			lost = append(lost, LostRange{Partition: p, From: c, To: lows[p], Cause: CauseDeletedUnread})
		}
	}
	sort.Slice(lost, func(i, j int) bool {
		a, b := lost[i], lost[j]
		return a.Partition < b.Partition || a.Partition == b.Partition && a.From < b.From
	})
	sort.Slice(unproven, func(i, j int) bool { return unproven[i] < unproven[j] })
	return lost, unproven, nil
}

// logStarts returns the low watermark of each partition of committed.
func logStarts(kcfg config.Kafka, topic string, committed map[int32]int64) (map[int32]int64, error) {
	cc := kafkaclient.ConsumerConfig(kcfg, "dlq-audit")
	cc["enable.auto.commit"] = false
	c, err := kafka.NewConsumer(&cc)
	if err != nil {
		return nil, fmt.Errorf("audit: consumer: %w", err)
	}
	defer c.Close()
	out := map[int32]int64{}
	for p := range committed {
		low, _, err := c.QueryWatermarkOffsets(topic, p, int(timeout/time.Millisecond))
		if err != nil {
			return nil, fmt.Errorf("audit: watermarks of %s/%d: %w", topic, p, err)
		}
		out[p] = low
	}
	return out, nil
}
