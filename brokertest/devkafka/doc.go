// Package devkafka runs an embedded, in-process Kafka-protocol broker for
// fast tests, the demo and local development.
//
// It wraps github.com/twmb/franz-go/pkg/kfake: a fake written in Go that
// speaks the Kafka wire protocol well enough for segmentio/kafka-go to
// produce, consume with consumer groups and commit offsets. It is not Kafka:
// behaviour that matters for correctness (timestamps, LogAppendTime,
// rebalances, SASL) is proven against the real broker started by
// tools/brokers.
//
// The broker listens on 127.0.0.1 only, on an ephemeral port unless
// WithPort says otherwise. Topics are created on first use with one
// partition, like a default Kafka broker.
package devkafka
