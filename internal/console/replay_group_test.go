package console_test

import (
	"fmt"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/headers"
	"github.com/dlqops/dlq/internal/routes"
	"github.com/dlqops/dlq/internal/store"
	"github.com/dlqops/dlq/internal/testenv"
	"github.com/dlqops/dlq/internal/testenv/kafkatest"
)

// The replay forms, single and bulk, offer to send each record by the group that failed
// it: a record's replay addressed to its group reaches its topic with dlq-target-group,
// a bulk replay to the groups' own topics reaches the group's topic; the confirmation and
// the job page say which.
func TestConsoleReplayByFailingGroup(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	failedBy := func(group string) func(int, *store.NewRecord) {
		return func(_ int, r *store.NewRecord) {
			r.Headers = append(r.Headers, store.Header{Key: headers.KeyConsumerGroup, Value: []byte(group)})
		}
	}
	single := e.park("GroupSingle", e.orders, 1, failedBy("svc-a"))[0]
	e.park("GroupBulk", e.orders, 2, failedBy("svc-b"))
	svcB := kafkatest.CreateNamedTopic(t, testenv.KafkaBootstrap(t), routes.GroupTopic(routes.DefaultGroupTopicTemplate, e.orders, "svc-b"), 1, nil)
	ctx := e.tab(t)
	e.signIn(t, ctx, adminToken)

	do(t, ctx, chromedp.Navigate(fmt.Sprintf("%s/ui/records/%d", e.url, single)), chromedp.WaitVisible("#replay"),
		chromedp.SetValue("#replay-redrive-to", routes.RedriveToGroupHeader), chromedp.Click("#replay"), chromedp.WaitVisible("#job-status"))
	waitJobPage(t, ctx, "succeeded")
	require.Equal(t, routes.RedriveToGroupHeader, text(t, ctx, "#job-redrive-to"))
	addressed := e.consume(t, e.orders, 1, func(m *kafka.Message) bool {
		return headers.Decode(headers.From(m.Headers)).Envelope.Replay != nil
	})
	require.Equal(t, "svc-a", headers.Decode(headers.From(addressed[0].Headers)).Envelope.TargetGroup)

	do(t, ctx, chromedp.Navigate(e.url+"/ui/records?status=parked&error_class=GroupBulk"), chromedp.WaitVisible("#bulk"),
		chromedp.Click("#bulk summary"), chromedp.WaitVisible("#bulk-dry-run"),
		chromedp.SetValue("#bulk-redrive-to", routes.RedriveToGroupTopic),
		chromedp.Click("#bulk-dry-run"), chromedp.WaitVisible("#confirm-count"))
	require.Equal(t, routes.RedriveToGroupTopic, text(t, ctx, "#bulk-confirm-redrive-to"))
	do(t, ctx, chromedp.SendKeys("#confirm-count", "2"), chromedp.Click("#confirm"), chromedp.WaitVisible("#job-status"))
	waitJobPage(t, ctx, "succeeded")
	require.Equal(t, routes.RedriveToGroupTopic, text(t, ctx, "#job-redrive-to"))
	require.Len(t, e.consume(t, svcB, 2, func(*kafka.Message) bool { return true }), 2)
}
