// Package doctor checks what the worker needs before its first run (Run): Kafka and
// PostgreSQL reachable, migrations applied, the routes' topics, and the mistakes the
// worker cannot see while it runs: share-group dead-letter topics (Kafka 4.4, KIP-1191)
// that the broker accepts silently and then never writes to.
package doctor

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
)

// Configuration names of share-group dead-letter topics (KIP-1191).
const (
	brokerPrefix     = "errors.deadletterqueue.topic.name.prefix"
	brokerAutoCreate = "errors.deadletterqueue.auto.create.topics.enable"
	topicEnable      = "errors.deadletterqueue.group.enable"
	groupTopic       = "errors.deadletterqueue.topic.name"
	shareVersion     = "share.version"
)

// Finding is one misconfiguration: what it is about and why no dead letter reaches the
// worker because of it; or, with Advice, something to look at that is no misconfiguration
// by itself.
type Finding struct {
	Subject string // "topic dlq.billing (share group billing-workers)", "group billing-workers", "cluster"
	Problem string
	Advice  bool
}

func (f Finding) String() string { return f.Subject + ": " + f.Problem }

// ShareGroupDLQs checks the share-group dead-letter set-up of the worker's DLQ topics
// (names, or regular expressions starting with ^ as in routes) and of the share groups
// named. A topic is checked as a share group's DLQ when a group names it or when it
// carries errors.deadletterqueue.group.enable; each topic finding names the groups that
// dead-letter to it. A topic that only has the broker's DLQ name prefix may be any other
// DLQ (Kafka Streams, Kafka Connect, Spring): it gets an Advice, no problem. Each rule is
// one the broker enforces silently, by archiving a rejected record without writing it to
// the DLQ:
//   - the broker supports share-group DLQs (Kafka 4.4: it has the prefix configuration);
//   - each group names a DLQ topic (errors.deadletterqueue.topic.name) that a route reads;
//   - that topic exists, or the broker may create it;
//   - the topic carries errors.deadletterqueue.group.enable=true;
//   - its name starts with the broker's errors.deadletterqueue.topic.name.prefix;
//   - the cluster's share.version is at least 2, asked through features when there is a
//     share-group DLQ to check (nil: not checked).
//
// err is a failure to ask the cluster, not a finding.
func ShareGroupDLQs(ctx context.Context, a *kafka.AdminClient, topics, groups []string, features func(context.Context) (map[string]int16, error)) ([]Finding, error) {
	cl, err := a.DescribeCluster(ctx)
	if err != nil {
		return nil, fmt.Errorf("describe cluster: %w", err)
	}
	if len(cl.Nodes) == 0 {
		return nil, fmt.Errorf("describe cluster: no broker")
	}
	broker, err := describe(ctx, a, kafka.ResourceBroker, strconv.Itoa(cl.Nodes[0].ID))
	if err != nil {
		return nil, err
	}
	prefix, supported := broker[brokerPrefix]
	if !supported {
		if len(groups) == 0 {
			return nil, nil // no share-group DLQ can exist, none is asked for
		}
		return []Finding{{Subject: "cluster", Problem: "the brokers are older than Kafka 4.4: share groups cannot dead-letter records (KIP-1191)"}}, nil
	}
	names, err := expand(a, topics)
	if err != nil {
		return nil, err
	}
	var out []Finding
	dlqs := map[string][]string{} // topics checked as share-group DLQs → the groups naming them
	for _, g := range groups {
		cfg, err := describe(ctx, a, kafka.ResourceGroup, g)
		if err != nil {
			return nil, err
		}
		t := cfg[groupTopic]
		switch {
		case t == "":
			out = append(out, Finding{Subject: "group " + g, Problem: groupTopic + " is not set: the broker archives the records the group rejects without dead-lettering them"})
			continue
		case !slices.Contains(names, t):
			out = append(out, Finding{Subject: "group " + g, Problem: fmt.Sprintf("dead-letters to %s, which no route reads", t)})
		}
		dlqs[t] = append(dlqs[t], g)
	}
	for _, t := range sortedKeys(dlqs) {
		subject := topicSubject(t, dlqs[t])
		cfg, err := describe(ctx, a, kafka.ResourceTopic, t)
		var ke kafka.Error
		if errors.As(err, &ke) && ke.Code() == kafka.ErrUnknownTopicOrPart {
			if broker[brokerAutoCreate] != "true" {
				out = append(out, Finding{Subject: subject, Problem: "does not exist, and " + brokerAutoCreate + " is false: the broker drops the group's dead letters"})
			}
			continue
		}
		if err != nil {
			return nil, err
		}
		if cfg[topicEnable] != "true" {
			out = append(out, Finding{Subject: subject, Problem: topicEnable + " is not true: the broker writes no share-group dead letter to it"})
		}
		if !strings.HasPrefix(t, prefix) {
			out = append(out, Finding{Subject: subject, Problem: fmt.Sprintf("the name does not start with the brokers' %s %q: the broker writes no share-group dead letter to it", brokerPrefix, prefix)})
		}
	}
	// The routes' other topics: those that enable share-group dead letters are share-group
	// DLQs no group named here; those with the prefix alone are likely another kind of DLQ.
	for _, t := range names {
		if dlqs[t] != nil {
			continue
		}
		cfg, err := describe(ctx, a, kafka.ResourceTopic, t)
		if err != nil {
			continue // a missing route topic is reported by the topics check
		}
		switch {
		case cfg[topicEnable] == "true":
			dlqs[t] = []string{}
			if !strings.HasPrefix(t, prefix) {
				out = append(out, Finding{Subject: topicSubject(t, nil), Problem: fmt.Sprintf("the name does not start with the brokers' %s %q: the broker writes no share-group dead letter to it", brokerPrefix, prefix)})
			}
		case prefix != "" && strings.HasPrefix(t, prefix):
			out = append(out, Finding{Subject: "topic " + t, Advice: true, Problem: fmt.Sprintf("has the brokers' share-group DLQ prefix %q but %s is not true: "+
				"fine for a Kafka Streams, Connect or Spring DLQ; if a share group dead-letters to it, enable it and name the group with --share-group", prefix, topicEnable)})
		}
	}
	if len(dlqs) > 0 && features != nil {
		levels, err := features(ctx)
		if err != nil {
			return nil, fmt.Errorf("feature levels: %w", err)
		}
		if v := levels[shareVersion]; v < 2 {
			out = append(out, Finding{Subject: "cluster", Problem: fmt.Sprintf("%s is %d: share groups dead-letter records from level 2 on (kafka-features.sh upgrade --feature %s=2)", shareVersion, v, shareVersion)})
		}
	}
	return out, nil
}

// describe returns the configuration of one resource as name → value.
func describe(ctx context.Context, a *kafka.AdminClient, typ kafka.ResourceType, name string) (map[string]string, error) {
	res, err := a.DescribeConfigs(ctx, []kafka.ConfigResource{{Type: typ, Name: name}})
	if err != nil {
		return nil, fmt.Errorf("describe %s %s: %w", typ, name, err)
	}
	if len(res) != 1 {
		return nil, fmt.Errorf("describe %s %s: %d results", typ, name, len(res))
	}
	if res[0].Error.Code() != kafka.ErrNoError {
		return nil, res[0].Error
	}
	out := map[string]string{}
	for k, v := range res[0].Config {
		out[k] = v.Value
	}
	return out, nil
}

// expand returns the topic names the routes' topics stand for: names as they are,
// regular expressions (starting with ^) matched against the cluster's topics.
func expand(a *kafka.AdminClient, topics []string) ([]string, error) {
	var names []string
	var res []*regexp.Regexp
	for _, t := range topics {
		if strings.HasPrefix(t, "^") {
			re, err := regexp.Compile(t)
			if err != nil {
				return nil, fmt.Errorf("topic pattern %q: %w", t, err)
			}
			res = append(res, re)
		} else {
			names = append(names, t)
		}
	}
	if len(res) > 0 {
		md, err := a.GetMetadata(nil, true, 10000)
		if err != nil {
			return nil, fmt.Errorf("metadata: %w", err)
		}
		for t := range md.Topics {
			for _, re := range res {
				if re.MatchString(t) && !slices.Contains(names, t) {
					names = append(names, t)
				}
			}
		}
	}
	sort.Strings(names)
	return names, nil
}

// topicSubject names a share-group DLQ topic with the groups that dead-letter to it, so
// that a finding says which group's dead letters it is about.
func topicSubject(t string, groups []string) string {
	if len(groups) == 0 {
		return "topic " + t + " (no --share-group names it)"
	}
	return "topic " + t + " (share group " + strings.Join(groups, ", ") + ")"
}

func sortedKeys(m map[string][]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
