// Package delivery is the one way a record leaves for Kafka, whoever sends it: the
// worker's redrive of DLQ records, its redrive of due scheduled records, and the replay
// jobs operators start. It decides where a record may go (package rules: the route's
// allowed_targets bind every path, replays included), checks through metadata that the
// topic exists (never creating one), chooses the partition, builds the outgoing message
// with our headers, and says what a produce failure means (transient, permanent with the
// park reason, or fatal). Nothing else builds an outgoing record. Produce goes through
// confluent-kafka-go with a per-record opaque or report channel (replays, scheduled
// records, and the redrive on read_path poll); ProduceFast, the redrive's hot path,
// through kafkafast's Producer, which hands librdkafka each record in one call and
// matches each report to its record by an id.
package delivery
