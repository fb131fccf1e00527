// Package integration holds the end-to-end tests of the otel module on
// real brokers (build tag integration): a message traced from publish
// through its retry to its dead letter on Kafka (retry tier and
// re-injector) and on Pulsar (negative acknowledgement and republish).
// It is a module of its own so that the otel module requires neither
// binding. The tests read the brokers' addresses from BQ_KAFKA_BROKERS and
// BQ_PULSAR_URL (tools/brokers/env.sh) and fail when they are missing.
package integration
