package redrive_test

import (
	"slices"
	"testing"

	"github.com/dlqops/dlq/internal/routes"
	"github.com/dlqops/dlq/internal/store/storetest"
	"github.com/dlqops/dlq/internal/testenv"
	"github.com/dlqops/dlq/internal/testenv/kafkatest"
)

// BenchmarkExactlyOnce: a run over a backlog of due records with delivery exactly_once
// ("ours": redrives and offsets in Kafka transactions) against the same run with
// at_least_once ("at_least_once"), from the run's start to the last offset committed.
// The backlog is DLQ_BENCH_EOS_RECORDS records (default 100,000; 1,000,000 for the long
// figure); the two take turns for DLQ_BENCH_ROUNDS rounds (default 3), the order swapped
// every round, each with a fresh group and store; benchratio takes the median of the
// per-round ratios.
func BenchmarkExactlyOnce(b *testing.B) {
	e := newBenchEnv(b)
	e.n = testenv.BenchSize(b, "DLQ_BENCH_EOS_RECORDS", 100_000, 1)
	rounds := testenv.BenchSize(b, "DLQ_BENCH_ROUNDS", 3, 1)
	dlq := e.seedDLQ(b, 1, kafkatest.CreateTopic(b, e.bootstrap, benchPartitions, nil))
	side := func(delivery string) func(b *testing.B) {
		return func(b *testing.B) {
			e.benchLoop(b, func() func() {
				rc := benchRouteConfig(dlq)
				rc.Delivery = delivery
				eng := e.startBenchEngine(b, storetest.New(b), rc)
				b.Cleanup(func() { stopEngine(b, eng) })
				return func() { e.runUntilDrained(b, eng, rc) }
			})
		}
	}
	sides := map[string]func(b *testing.B){"ours": side(routes.DeliveryExactlyOnce), "at_least_once": side(routes.DeliveryAtLeastOnce)}
	order := []string{"at_least_once", "ours"}
	for range rounds {
		for _, s := range order {
			b.Run(s, sides[s])
		}
		slices.Reverse(order)
	}
}
