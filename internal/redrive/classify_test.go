package redrive

import (
	"hash/fnv"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/delivery/rules"
	"github.com/dlqops/dlq/internal/headers"
	"github.com/dlqops/dlq/internal/routes"
	"github.com/dlqops/dlq/internal/store"
)

// toOrders is where a record of original topic orders is redriven on a source route.
var toOrders = rules.Address{Topic: "orders"}

func testRoute(t *testing.T, mutate func(*routes.Config)) route {
	t.Helper()
	rc := routes.Config{Name: "r", Topics: []string{"orders.dlq"}}
	if mutate != nil {
		mutate(&rc)
	}
	rc.WithDefaults()
	require.NoError(t, rc.Validate())
	r, err := compileRoute(rc)
	require.NoError(t, err)
	return r
}

func TestClassify(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	from := headers.Coordinates{Topic: "orders.dlq", Partition: 1, Offset: 42}
	hs := func(kv ...string) []headers.Header {
		var out []headers.Header
		for i := 0; i < len(kv); i += 2 {
			out = append(out, headers.Header{Key: kv[i], Value: []byte(kv[i+1])})
		}
		return out
	}
	fixed := func(rc *routes.Config) { rc.Backoff = &routes.Backoff{Base: time.Minute, Factor: 2, Cap: time.Hour} }
	for name, tc := range map[string]struct {
		route   func(*routes.Config)
		headers []headers.Header
		written time.Time
		want    decision
	}{
		"due":             {route: fixed, headers: hs("retryCount", "1", "originalTopic", "orders"), written: now.Add(-3 * time.Minute), want: decision{act: actRedrive, to: toOrders}},
		"not due":         {route: fixed, headers: hs("retryCount", "1", "originalTopic", "orders"), written: now.Add(-time.Minute), want: decision{act: actSchedule, reason: store.ReasonBackoff, due: now.Add(time.Minute)}},
		"last failure":    {route: fixed, headers: hs(headers.KeyRetryCount, "2", headers.KeyOriginalTopic, "orders", headers.KeyLastFailure, "2026-03-01T11:58:00.000Z"), written: now.Add(-time.Hour), want: decision{act: actSchedule, reason: store.ReasonBackoff, due: now.Add(2 * time.Minute)}},
		"not-before hint": {route: func(rc *routes.Config) { rc.Backoff = &routes.Backoff{None: true} }, headers: hs("originalTopic", "orders", "retry_topic-backoff-timestamp", strconv.FormatInt(now.Add(time.Hour).UnixMilli(), 10)), written: now, want: decision{act: actSchedule, reason: store.ReasonBackoff, due: now.Add(time.Hour)}},
		"hint after due":  {route: fixed, headers: hs("retryCount", "1", "originalTopic", "orders", "retry_topic-backoff-timestamp", strconv.FormatInt(now.Add(5*time.Minute).UnixMilli(), 10)), written: now.Add(-time.Minute), want: decision{act: actSchedule, reason: store.ReasonBackoff, due: now.Add(5 * time.Minute)}},
		"hint before due": {route: fixed, headers: hs("retryCount", "1", "originalTopic", "orders", "retry_topic-backoff-timestamp", strconv.FormatInt(now.Add(-time.Hour).UnixMilli(), 10)), written: now.Add(-time.Minute), want: decision{act: actSchedule, reason: store.ReasonBackoff, due: now.Add(time.Minute)}},
		"past hint":       {route: fixed, headers: hs("retryCount", "1", "originalTopic", "orders", "retry_topic-backoff-timestamp", strconv.FormatInt(now.Add(-time.Hour).UnixMilli(), 10)), written: now.Add(-3 * time.Minute), want: decision{act: actRedrive, to: toOrders}},
		"far hint":        {route: fixed, headers: hs("originalTopic", "orders", "retry_topic-backoff-timestamp", strconv.FormatInt(now.Add(90*24*time.Hour).UnixMilli(), 10)), written: now.Add(-time.Hour), want: decision{act: actSchedule, reason: store.ReasonBackoff, due: now.Add(24 * time.Hour)}},
		"far hint, long backoff": {route: func(rc *routes.Config) {
			rc.Backoff = &routes.Backoff{Base: time.Hour, Factor: 2, Cap: 72 * time.Hour}
			rc.MaxRetries = ptr(20)
		}, headers: hs("retryCount", "10", "originalTopic", "orders", "retry_topic-backoff-timestamp", strconv.FormatInt(now.Add(90*24*time.Hour).UnixMilli(), 10)), written: now.Add(-12 * time.Hour), want: decision{act: actSchedule, reason: store.ReasonBackoff, due: now.Add(60 * time.Hour)}},
		"no backoff":      {route: func(rc *routes.Config) { rc.Backoff = &routes.Backoff{None: true} }, headers: hs("originalTopic", "orders"), written: now, want: decision{act: actRedrive, to: toOrders}},
		"exhausted":       {headers: hs("retryCount", "5", "originalTopic", "orders"), want: decision{act: actPark, reason: store.ReasonExhausted}},
		"exhausted early": {route: func(rc *routes.Config) { rc.MaxRetries = ptr(2) }, headers: hs("retryCount", "2", "originalTopic", "orders"), want: decision{act: actPark, reason: store.ReasonExhausted}},
		"no topic":        {headers: hs("retryCount", "1"), want: decision{act: actPark, reason: store.ReasonUnroutable}},
		"bad retry count": {headers: hs("retryCount", "x", "originalTopic", "orders"), want: decision{act: actPark, reason: store.ReasonInvalidRetryCount}},
		"not allowed":     {route: func(rc *routes.Config) { rc.AllowedTargets = []string{"^payments\\..*"} }, headers: hs("originalTopic", "orders"), want: decision{act: actPark, reason: store.ReasonTargetNotAllowed}},
		"allowed by name": {route: func(rc *routes.Config) {
			rc.AllowedTargets = []string{"orders"}
			rc.Backoff = &routes.Backoff{None: true}
		}, headers: hs("originalTopic", "orders"), want: decision{act: actRedrive, to: toOrders}},
		"to the failing group's topic": {route: func(rc *routes.Config) {
			rc.RedriveTo = routes.RedriveToGroupTopic
			rc.Backoff = &routes.Backoff{None: true}
		}, headers: hs("originalTopic", "orders", headers.KeyConsumerGroup, "svc-a"), want: decision{act: actRedrive, to: rules.Address{Topic: "orders.redrive.svc-a"}}},
		"addressed to the failing group": {route: func(rc *routes.Config) {
			rc.RedriveTo = routes.RedriveToGroupHeader
			rc.Backoff = &routes.Backoff{None: true}
		}, headers: hs("originalTopic", "orders", "kafka_dlt-original-consumer-group", "svc-a"), want: decision{act: actRedrive, to: rules.Address{Topic: "orders", Group: "svc-a"}}},
		"no group named":   {route: func(rc *routes.Config) { rc.RedriveTo = routes.RedriveToGroupHeader }, headers: hs("originalTopic", "orders"), want: decision{act: actPark, reason: store.ReasonUnknownGroup}},
		"allowed, exactly": {route: func(rc *routes.Config) { rc.AllowedTargets = []string{"order"} }, headers: hs("originalTopic", "orders"), want: decision{act: actPark, reason: store.ReasonTargetNotAllowed}},
	} {
		t.Run(name, func(t *testing.T) {
			r := testRoute(t, tc.route)
			got := r.classify(headers.Decode(tc.headers), from, tc.written, now)
			got.detail = ""
			require.Equal(t, tc.want, got)
		})
	}
}

func TestJitterIsStablePerRecord(t *testing.T) {
	c := headers.Coordinates{Topic: "t", Partition: 3, Offset: 9}
	require.Equal(t, jitterDraw(c), jitterDraw(c))
	u := jitterDraw(headers.Coordinates{Topic: "t", Partition: 3, Offset: 10})
	require.NotEqual(t, jitterDraw(c), u)
	require.GreaterOrEqual(t, u, 0.0)
	require.Less(t, u, 1.0)
}

func ptr[T any](v T) *T { return &v }

// jitterDraw must keep drawing what hash/fnv gave: due times of stored records depend on it.
func TestJitterDrawMatchesFNV(t *testing.T) {
	for _, c := range []headers.Coordinates{{}, {Topic: "dlq.orders", Partition: 7, Offset: 123456789},
		{Topic: "t", Partition: -1, Offset: -5}, {Topic: "x_y-Z", Partition: 1 << 30, Offset: 1<<63 - 1}} {
		h := fnv.New64a()
		_, _ = h.Write([]byte(c.Topic))
		_, _ = h.Write([]byte{byte(c.Partition >> 24), byte(c.Partition >> 16), byte(c.Partition >> 8), byte(c.Partition)})
		_, _ = h.Write([]byte(strconv.FormatInt(c.Offset, 10)))
		require.Equal(t, float64(h.Sum64()>>11)/(1<<53), jitterDraw(c), "%+v", c)
	}
}
