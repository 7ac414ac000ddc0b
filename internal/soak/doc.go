// Package soak holds `make soak`: the real dlq-worker and dlq-admin binaries against a
// private Kafka broker and a private PostgreSQL server, through crashes, a zombie worker,
// database and broker outages and moved offsets, each scenario once with delivery
// at_least_once and once with exactly_once. Every scenario ends with `dlq-worker audit`
// and an independent count of the target topic (as a read_committed consumer) and the
// parked rows by record key, and prints one row of a table (scenario, delivery, records,
// missing, duplicated, verdict); under exactly_once a duplicate fails the verdict. The
// scenarios run only when DLQ_SOAK=1 (the Makefile target sets it); `make test` skips them.
package soak
