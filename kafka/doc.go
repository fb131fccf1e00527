// Package kafka is the Apache Kafka binding of BabelQueue (broker-bindings §6).
package kafka
