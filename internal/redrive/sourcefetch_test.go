package redrive

import (
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/kafkaclient"
	"github.com/dlqops/dlq/internal/testenv"
	"github.com/dlqops/dlq/internal/testenv/kafkatest"
)

// A source partition the fetcher paused (its read-ahead full) and then let go of is read
// again when a later pointer names it. librdkafka keeps an application's pause of a
// partition across its unassignment and a later assignment: the partition assigned again
// was never fetched, every pointer to it timed out, and the run stalled on them for good
// (seen in TestSharePointersThroughABrokerOutage, where the outage left the partition
// without a pointer for longer than fetchIdle right after the fetcher paused it).
func TestFetcherReadsAgainASourcePartitionItLetGoOfPaused(t *testing.T) {
	t.Parallel()
	bs := testenv.KafkaBootstrap(t)
	source := kafkatest.CreateTopic(t, bs, 2, nil)
	prod := testProducer(t, kafkaclient.Config{BootstrapServers: bs})
	for part := range int32(2) {
		for i := range 3 {
			produceAcked(t, prod, source, part, []byte(strconv.Itoa(i)))
		}
	}
	for _, c := range []struct {
		name   string
		letGo  func(f *fetcher, k partKey)
		offset int64 // where the next pointer reads
	}{
		{"evicted idle", func(f *fetcher, k partKey) {
			f.parts[k].used = time.Now().Add(-fetchIdle - time.Second)
			m, err := f.read(source, 0, 0) // the next read evicts it
			require.NoError(t, err)
			require.Equal(t, []byte("0"), m.Value)
		}, 1},
		{"released at the end of a run", func(f *fetcher, _ partKey) { f.release() }, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := &sources{kafka: kafkaclient.Config{BootstrapServers: bs}, group: testenv.UniqueName("fetch-"), clientID: "test", route: "r",
				seeks: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "seeks"}, []string{"route"})}
			f, err := s.fetcher()
			require.NoError(t, err)
			t.Cleanup(f.close)
			m, err := f.read(source, 1, 0)
			require.NoError(t, err)
			require.Equal(t, []byte("0"), m.Value)
			k := partKey{source, 1}
			f.setPaused(k, f.parts[k], true) // as when its read-ahead is full
			c.letGo(f, k)
			require.Nil(t, f.parts[k], "let go of")

			m, err = f.read(source, 1, c.offset)
			require.NoError(t, err, "the partition assigned again is fetched")
			require.Equal(t, []byte(strconv.FormatInt(c.offset, 10)), m.Value)
		})
	}
}
