// Package demo is the `make demo` job of the order status example: it runs
// the processor against a Kafka-protocol broker (the embedded one from
// brokertest/devkafka, or a real cluster), publishes a scripted mix of order
// events, waits until every record is settled, and accounts for each record
// by reading the topics and the projection back.
package demo
