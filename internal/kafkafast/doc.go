// Package kafkafast is the worker's fast path into librdkafka, and the only code that
// calls librdkafka's C API or reaches into confluent-kafka-go's private fields: a Queue
// takes a consumer's records with one call into librdkafka each, off the path of its
// events, and a Producer of its own produces a record with one call each and matches its
// delivery report by a per-record id.
//
// Both depend on the internals of one release of confluent-kafka-go and of the
// librdkafka it bundles. Check refuses any other release, and NewQueue and NewProducer
// return its error: their caller then uses confluent-kafka-go's public API
// (the worker's read_path poll). TestCheckedVersionIsTheOneRequired fails when go.mod
// requires another release; the development docs' upgrade checklist says what to check
// before moving checkedVersion.
package kafkafast
