package doctor_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/doctor"
	"github.com/dlqops/dlq/internal/testenv"
	"github.com/dlqops/dlq/internal/testenv/kafkatest"
)

// setGroupDLQ sets a share group's errors.deadletterqueue.topic.name, as
// kafka-configs.sh --alter --group would.
func setGroupDLQ(t *testing.T, a *kafka.AdminClient, group, topic string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := a.IncrementalAlterConfigs(ctx, []kafka.ConfigResource{{Type: kafka.ResourceGroup, Name: group,
		Config: []kafka.ConfigEntry{{Name: "errors.deadletterqueue.topic.name", Value: topic, IncrementalOperation: kafka.AlterConfigOpTypeSet}}}})
	require.NoError(t, err)
	require.Equal(t, kafka.ErrNoError, res[0].Error.Code(), res[0].Error.String())
}

// features asks the broker at bootstrap for its finalized feature levels.
func features(bootstrap string) func(context.Context) (map[string]int16, error) {
	return func(ctx context.Context) (map[string]int16, error) { return doctor.FinalizedFeatures(ctx, bootstrap) }
}

// Each share-group DLQ misconfiguration that the real 4.4 broker accepts silently (and
// then archives rejected records without a dead letter) is found, with its subject; a
// correct set-up gives no finding.
func TestShareGroupDLQs(t *testing.T) {
	t.Parallel()
	bs := testenv.KafkaBootstrap(t)
	a := kafkatest.Admin(t, bs)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl, err := a.DescribeCluster(ctx)
	require.NoError(t, err)
	res, err := a.DescribeConfigs(ctx, []kafka.ConfigResource{{Type: kafka.ResourceBroker, Name: strconv.Itoa(cl.Nodes[0].ID)}})
	require.NoError(t, err)
	if _, ok := res[0].Config["errors.deadletterqueue.topic.name.prefix"]; !ok {
		t.Skip("the broker is older than Kafka 4.4; restart it with scripts/stack.sh to run this test")
	}
	enable := map[string]string{"errors.deadletterqueue.group.enable": "true"}

	good := kafkatest.CreateNamedTopic(t, bs, "dlq."+testenv.UniqueName("good-"), 1, enable)
	goodGroup := testenv.UniqueName("good-group-")
	setGroupDLQ(t, a, goodGroup, good)
	findings, err := doctor.ShareGroupDLQs(ctx, a, []string{good}, []string{goodGroup}, features(bs))
	require.NoError(t, err)
	require.Empty(t, findings, "a correct set-up")

	notEnabled := kafkatest.CreateNamedTopic(t, bs, "dlq."+testenv.UniqueName("plain-"), 1, nil)
	noPrefix := kafkatest.CreateNamedTopic(t, bs, testenv.UniqueName("noprefix-"), 1, enable)
	missing := "dlq." + testenv.UniqueName("absent-")
	notRead := kafkatest.CreateNamedTopic(t, bs, "dlq."+testenv.UniqueName("unread-"), 1, enable)
	groups := map[string]string{ // group → its DLQ topic, "" for none
		testenv.UniqueName("g-plain-"):   notEnabled,
		testenv.UniqueName("g-prefix-"):  noPrefix,
		testenv.UniqueName("g-missing-"): missing,
		testenv.UniqueName("g-unread-"):  notRead,
		testenv.UniqueName("g-none-"):    "",
	}
	var names []string
	for g, topic := range groups {
		if topic != "" {
			setGroupDLQ(t, a, g, topic)
		}
		names = append(names, g)
	}
	// A topic that enables group dead letters without the prefix and no group named.
	orphan := kafkatest.CreateNamedTopic(t, bs, testenv.UniqueName("orphan-"), 1, enable)
	findings, err = doctor.ShareGroupDLQs(ctx, a, []string{good, notEnabled, noPrefix, missing, orphan, "^" + testenv.UniqueName("nomatch-")}, append(names, goodGroup), features(bs))
	require.NoError(t, err)
	got := map[string][]string{}
	for _, f := range findings {
		got[f.Subject] = append(got[f.Subject], f.Problem)
	}
	group := map[string]string{} // topic → the group naming it
	for g, topic := range groups {
		group[topic] = g
	}
	// Each topic line names the group whose dead letters it is about.
	want := map[string]string{
		"topic " + notEnabled + " (share group " + group[notEnabled] + ")": "errors.deadletterqueue.group.enable is not true",
		"topic " + noPrefix + " (share group " + group[noPrefix] + ")":     `does not start with the brokers' errors.deadletterqueue.topic.name.prefix "dlq."`,
		"topic " + missing + " (share group " + group[missing] + ")":       "does not exist, and errors.deadletterqueue.auto.create.topics.enable is false",
		"topic " + orphan + " (no --share-group names it)":                 `does not start with the brokers' errors.deadletterqueue.topic.name.prefix "dlq."`,
		"group " + group[""]:      "errors.deadletterqueue.topic.name is not set",
		"group " + group[notRead]: "dead-letters to " + notRead + ", which no route reads",
	}
	for subject, problem := range want {
		require.Len(t, got[subject], 1, "%s: %v", subject, got[subject])
		require.Contains(t, got[subject][0], problem, subject)
	}
	require.Len(t, findings, len(want), "%v", findings)
}

// A cluster formatted with share.version=1 has share groups but no share-group dead
// letters: a correct DLQ topic is then reported with the cluster's level. The shared
// stack's 4.4 defaults finalize share.version=2.
func TestShareVersionBelow2(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	levels, err := doctor.FinalizedFeatures(ctx, testenv.KafkaBootstrap(t))
	require.NoError(t, err)
	require.NotZero(t, levels["metadata.version"], "finalized features read: %v", levels)
	if _, ok := levels["share.version"]; !ok {
		t.Skip("the shared broker is older than Kafka 4.4; restart it with scripts/stack.sh to run this test")
	}
	require.Equal(t, int16(2), levels["share.version"], "the stack's defaults")

	b := kafkatest.StartBrokerWithFeatures(t, "share.version=1")
	bs := b.Bootstrap()
	ctx, cancel = context.WithTimeout(context.Background(), time.Minute) // the broker's start may take longer
	defer cancel()
	levels, err = doctor.FinalizedFeatures(ctx, bs)
	require.NoError(t, err)
	require.Equal(t, int16(1), levels["share.version"])
	topic := kafkatest.CreateNamedTopic(t, bs, "dlq."+testenv.UniqueName("v1-"), 1, map[string]string{"errors.deadletterqueue.group.enable": "true"})
	findings, err := doctor.ShareGroupDLQs(ctx, kafkatest.Admin(t, bs), []string{topic}, nil, features(bs))
	require.NoError(t, err)
	require.Equal(t, []doctor.Finding{{Subject: "cluster", Problem: "share.version is 1: share groups dead-letter records from level 2 on (kafka-features.sh upgrade --feature share.version=2)"}}, findings)
}
