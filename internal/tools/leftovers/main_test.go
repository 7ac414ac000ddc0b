package main

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/store"
	"github.com/dlqops/dlq/internal/testenv"
	"github.com/dlqops/dlq/internal/testenv/kafkatest"
)

// A topic created and a dead-letter row stored in the default schema after the snapshot
// make check fail, naming both; once the topic is deleted and the row gone, neither is
// named (other suites may share the broker: the test looks for its own names only).
func TestCheckNamesWhatTheSuiteLeft(t *testing.T) {
	ctx := context.Background()
	bs := testenv.KafkaBootstrap(t)
	dbURL := testenv.Schema(t)
	require.NoError(t, store.Migrate(ctx, dbURL))
	t.Setenv("DATABASE_URL", dbURL)
	snap := filepath.Join(t.TempDir(), "before.json")
	require.NoError(t, run([]string{"snapshot", snap}, 0, nil))
	before, err := take(ctx, bs, dbURL)
	require.NoError(t, err)

	topic := kafkatest.CreateTopic(t, bs, 1, nil)
	st, err := store.Open(ctx, dbURL)
	require.NoError(t, err)
	defer st.Close()
	dlq := testenv.UniqueName("dlq.leftover-")
	_, err = st.StoreBatch(ctx, []store.NewRecord{{DLQ: store.Coordinates{Topic: dlq}, Origin: store.Origin{Topic: topic, Partition: -1, Offset: -1},
		Timestamp: time.Unix(1e9, 0), Reason: store.ReasonExhausted, Status: store.StatusParked, Route: "r", Headers: []store.Header{}}}, nil)
	require.NoError(t, err)

	err = run([]string{"check", snap}, 0, nil)
	require.Error(t, err)
	require.Contains(t, err.Error(), topic)
	require.Contains(t, err.Error(), "stats: "+dlq)

	_, err = kafkatest.Admin(t, bs).DeleteTopics(ctx, []string{topic})
	require.NoError(t, err)
	page, err := st.List(ctx, store.Filter{}, "", 10)
	require.NoError(t, err)
	_, err = st.Discard(ctx, page.Records[0].ID, store.Actor{Name: "t"})
	require.NoError(t, err)
	_, err = st.Purge(ctx, -time.Hour)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		now, err := take(ctx, bs, dbURL)
		if err != nil {
			return false
		}
		for _, name := range added(before, now) {
			if name == topic || name == "stats: "+dlq || name == "stats: "+topic {
				return false
			}
		}
		return true
	}, time.Minute, 200*time.Millisecond)
}
