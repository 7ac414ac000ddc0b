package redrive

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/headers"
	"github.com/dlqops/dlq/internal/routes"
	"github.com/dlqops/dlq/internal/store"
)

// TestClassifyNotRetryable: a route's not_retryable, read from every convention's error
// class, and the writer's permanent mark park a record at first sight, before exhaustion;
// anything else is redriven as before.
func TestClassifyNotRetryable(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	from := headers.Coordinates{Topic: "orders.dlq", Partition: 1, Offset: 42}
	hs := func(kv ...string) []headers.Header {
		var out []headers.Header
		for i := 0; i < len(kv); i += 2 {
			out = append(out, headers.Header{Key: kv[i], Value: []byte(kv[i+1])})
		}
		return out
	}
	for name, tc := range map[string]struct {
		route   func(*routes.Config)
		headers []headers.Header
		written time.Time
		want    decision
	}{
		"not retryable": {route: func(rc *routes.Config) { rc.NotRetryable = []string{"SerializationException"} },
			headers: hs(headers.KeyRetryCount, "0", headers.KeyOriginalTopic, "orders", headers.KeyErrorClass, "org.apache.kafka.common.errors.SerializationException"), want: decision{act: actPark, reason: store.ReasonNotRetryable}},
		"not retryable before exhausted": {route: func(rc *routes.Config) { rc.NotRetryable = []string{"^com\\.acme\\."} },
			headers: hs(headers.KeyRetryCount, "5", headers.KeyOriginalTopic, "orders", headers.KeyErrorClass, "com.acme.BadOrder"), want: decision{act: actPark, reason: store.ReasonNotRetryable}},
		"retryable class": {route: func(rc *routes.Config) {
			rc.NotRetryable = []string{"SerializationException"}
			rc.Backoff = &routes.Backoff{None: true}
		},
			headers: hs(headers.KeyOriginalTopic, "orders", headers.KeyErrorClass, "org.apache.kafka.common.errors.TimeoutException"), written: now, want: decision{act: actRedrive, to: toOrders}},
		"spring cause": {route: func(rc *routes.Config) { rc.NotRetryable = []string{"DeserializationException"} },
			headers: hs("kafka_dlt-original-topic", "orders", "kafka_dlt-exception-fqcn", "org.springframework.kafka.listener.ListenerExecutionFailedException", "kafka_dlt-exception-cause-fqcn", "org.springframework.kafka.support.serializer.DeserializationException"), want: decision{act: actPark, reason: store.ReasonNotRetryable}},
		"connect class": {route: func(rc *routes.Config) { rc.NotRetryable = []string{"DataException"} },
			headers: hs("__connect.errors.topic", "orders", "__connect.errors.exception.class.name", "org.apache.kafka.connect.errors.DataException"), want: decision{act: actPark, reason: store.ReasonNotRetryable}},
		"streams class": {route: func(rc *routes.Config) {
			rc.NotRetryable = []string{"^org\\.apache\\.kafka\\.common\\.errors\\.Serialization"}
		},
			headers: hs("__streams.errors.topic", "orders", "__streams.errors.exception", "org.apache.kafka.common.errors.SerializationException"), want: decision{act: actPark, reason: store.ReasonNotRetryable}},
		"permanent":                   {route: func(rc *routes.Config) { rc.Backoff = &routes.Backoff{None: true} }, headers: hs(headers.KeyOriginalTopic, "orders", headers.KeyErrorPermanent, "true"), written: now, want: decision{act: actPark, reason: store.ReasonNotRetryable}},
		"not permanent":               {route: func(rc *routes.Config) { rc.Backoff = &routes.Backoff{None: true} }, headers: hs(headers.KeyOriginalTopic, "orders", headers.KeyErrorPermanent, "yes"), written: now, want: decision{act: actRedrive, to: toOrders}},
		"newer failure not permanent": {route: func(rc *routes.Config) { rc.Backoff = &routes.Backoff{None: true} }, headers: hs(headers.KeyOriginalTopic, "orders", headers.KeyErrorPermanent, "true", "kafka_dlt-exception-fqcn", "java.net.SocketTimeoutException"), written: now, want: decision{act: actRedrive, to: toOrders}},
	} {
		t.Run(name, func(t *testing.T) {
			r := testRoute(t, tc.route)
			got := r.classify(headers.Decode(tc.headers), from, tc.written, now)
			got.detail = ""
			require.Equal(t, tc.want, got)
		})
	}
}
