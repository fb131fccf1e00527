// Package pulsar is the Apache Pulsar binding of BabelQueue (broker-bindings §5).
package pulsar
