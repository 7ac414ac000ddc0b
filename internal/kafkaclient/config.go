package kafkaclient

import "fmt"

// Config is the client configuration shared by every Kafka handle the worker opens
// (`kafka:`).
type Config struct {
	// BootstrapServers are the brokers; it starts from KAFKA_BOOTSTRAP_SERVERS, which the
	// file and the prefixed variable override.
	BootstrapServers string `yaml:"bootstrap_servers"`
	// Extra holds further librdkafka properties of every client (security.protocol,
	// sasl.*, client.id, ...).
	Extra map[string]string `yaml:"extra"`
	// Consumer and Producer hold librdkafka properties of the consumers only
	// (session.timeout.ms, fetch.*) and of the producers only (linger.ms,
	// compression.type): librdkafka warns (CONFWARN) about a consumer property given to a
	// producer, or the other way round. They override Extra.
	Consumer map[string]string `yaml:"consumer"`
	Producer map[string]string `yaml:"producer"`
	// ExtraFiles holds librdkafka properties whose value is the content of a file
	// (sasl.password from a mounted Secret), read at start-up into Extra without one
	// trailing newline, so that a secret is in neither the file nor the environment. A
	// property may not also be in Extra; a missing file stops start-up.
	ExtraFiles map[string]string `yaml:"extra_files"`
}

// Validate requires bootstrap servers.
func (k Config) Validate() error {
	if k.BootstrapServers == "" {
		return fmt.Errorf("kafka.bootstrap_servers: required (or set KAFKA_BOOTSTRAP_SERVERS)")
	}
	return nil
}
