package api_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/api"
	"github.com/dlqops/dlq/internal/headers"
	"github.com/dlqops/dlq/internal/store"
)

// A record's detail names the consumer group that failed it, as its headers do; a record
// whose headers name none has no group.
func TestRecordDetailNamesTheFailingGroup(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ids := b.park("orders", 2, func(i int, r *store.NewRecord) {
		if i == 0 {
			r.Headers = append(r.Headers, store.Header{Key: "kafka_dlt-original-consumer-group", Value: []byte("spring-svc")},
				store.Header{Key: headers.KeyConsumerGroup, Value: []byte("svc-a")})
		}
	})
	for i, want := range []string{"svc-a", ""} {
		var d api.RecordDetail
		r := b.do("GET", path("/v1/records/%d", ids[i]), viewerToken, nil)
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
		r.decode(t, &d)
		require.Equal(t, want, d.Envelope.ConsumerGroup)
	}
}
