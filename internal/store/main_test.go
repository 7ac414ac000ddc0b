package store_test

import (
	"fmt"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/dlqops/dlq/internal/store"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// parked returns n parked records at offsets from..from+n-1 of partition 0 of topic.
func parked(topic string, from int64, n int) []store.NewRecord {
	recs := make([]store.NewRecord, n)
	for i := range recs {
		off := from + int64(i)
		recs[i] = store.NewRecord{
			DLQ:          store.Coordinates{Topic: topic, Partition: 0, Offset: off},
			Origin:       store.Origin{Topic: "orders", Partition: 3, Offset: 1000 + off, Timestamp: time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)},
			Key:          fmt.Appendf(nil, "key-%d", off),
			Value:        fmt.Appendf(nil, "value-%d", off),
			Headers:      []store.Header{{Key: "retryCount", Value: []byte("5")}},
			Timestamp:    time.Date(2026, 2, 1, 0, 0, 1, 0, time.UTC),
			RetryCount:   5,
			ErrorClass:   "java.net.SocketTimeoutException",
			ErrorMessage: "read timed out",
			Reason:       store.ReasonExhausted,
			Status:       store.StatusParked,
			Route:        "orders",
		}
	}
	return recs
}

// scheduled returns n records like parked, scheduled and due at due.
func scheduled(topic string, from int64, n int, due time.Time) []store.NewRecord {
	recs := parked(topic, from, n)
	for i := range recs {
		recs[i].Status, recs[i].Reason, recs[i].DueAt = store.StatusScheduled, store.ReasonBackoff, due
	}
	return recs
}
