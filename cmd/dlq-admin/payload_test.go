package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/api"
	"github.com/dlqops/dlq/internal/store"
)

// The CLI shows what the API says of records without payload (share groups' dead letters
// whose source was gone): a bulk replay's dry run counts them apart and says a replay
// refuses them, the confirmed bulk replay and a single replay fail with the reason, and a
// single replay that gives the value (text or base64) is accepted.
func TestCLIReplayOfRecordsWithoutPayload(t *testing.T) {
	t.Parallel()
	s := newStack(t, []string{"orders"})
	recs := make([]store.NewRecord, 3)
	for i := range recs {
		recs[i] = store.NewRecord{
			DLQ: store.Coordinates{Topic: "dlq.orders", Offset: int64(i)}, Origin: store.Origin{Topic: "orders", Partition: 0, Offset: int64(i)},
			Headers: []store.Header{{Key: "__dlq.errors.topic", Value: []byte("orders")}}, Timestamp: time.Now(),
			Reason: store.ReasonSourceUnavailable, Status: store.StatusParked, Route: "orders",
			ErrorMessage: "source unavailable: topic orders does not exist; Offset rejected by client. (share group g, delivery count 1)",
		}
	}
	recs[2].Value = []byte("the group's copy")
	_, err := s.store.StoreBatch(context.Background(), recs, nil)
	require.NoError(t, err)

	out, err := s.cli(t, "bulk", "replay", "--original-topic", "orders")
	require.NoError(t, err)
	require.Contains(t, out, "3 records selected (dry run)")
	require.Contains(t, out, "2 of them have no payload (share-group dead letters whose source record was gone: key and value null): a replay refuses them")

	_, err = s.cli(t, "bulk", "replay", "--original-topic", "orders", "--yes")
	require.ErrorContains(t, err, "2 of the 3 selected records have no payload")

	page, err := s.store.ListAfter(context.Background(), store.Filter{}, 0, 10)
	require.NoError(t, err)
	require.Nil(t, page[0].Value)
	_, err = s.cli(t, "replay", strconv.FormatInt(page[0].ID, 10))
	require.ErrorContains(t, err, "the record has no payload: its source record was gone")
	_, err = s.cli(t, "replay", strconv.FormatInt(page[0].ID, 10), "--value", "a", "--value-b64", "YQ==")
	require.ErrorContains(t, err, "not both")
	out, err = s.cli(t, "-o", "json", "replay", strconv.FormatInt(page[0].ID, 10), "--value", "the record, rebuilt")
	require.NoError(t, err, "a replay that gives the value")
	var job api.Job
	require.NoError(t, json.Unmarshal([]byte(out), &job), out)
	require.Equal(t, []int64{page[0].ID}, job.IDs)
	_, err = s.cli(t, "replay", strconv.FormatInt(page[1].ID, 10), "--value-b64", base64.StdEncoding.EncodeToString([]byte{0, 0xff}))
	require.NoError(t, err, "a value in base64")

	out, err = s.cli(t, "bulk", "discard", "--original-topic", "orders", "--reason", "source gone")
	require.NoError(t, err)
	require.NotContains(t, out, "no payload", "a discard refuses nothing")
}
