// Package pulsar is the Apache Pulsar binding of BabelQueue (broker-bindings
// §5), built on github.com/apache/pulsar-client-go.
//
// A Transport implements babelqueue.Transport and the optional capabilities
// the App runtime looks for, so that a Go service exchanges messages over
// Pulsar with services written in the other BabelQueue SDKs:
//
//	tr, err := pulsar.New(
//		pulsar.WithServiceURL("pulsar://127.0.0.1:6650"),
//		pulsar.WithSubscriptionType(pulsarclient.Shared),
//	)
//	app := babelqueue.NewApp(tr)
//
// # Wire mapping
//
// The message payload is the envelope's bytes. Publish sets the string
// properties bq-job, bq-trace-id, bq-message-id, bq-schema-version,
// bq-source-lang and bq-attempts from the body (a field the body lacks is
// not written) and the event time to meta.created_at. Out-of-band
// properties, such as W3C traceparent, ride beside them; a contract property
// wins a key collision. PublishDelayed uses Pulsar's native DeliverAfter.
// PublishFrom, PublishFromWithHeaders, Forward and Retry keep the message key
// and the ordering key of the message they start from.
//
// # Attempts
//
// Pop reconciles the attempts of a delivery: the bq-attempts property when
// it is valid (plain digits, at most 2147483647), else the body's attempts,
// and then at least the message's redelivery count (0 on first delivery).
// The body is rewritten, changing nothing but the attempts value, only when
// it holds an integer attempts and the reconciled value differs. A message
// rejected by the version gate is returned exactly as received.
//
// # Retries and subscription types
//
// Retry, which the App prefers for retryable failures, republishes the
// message to the topic it came from with bq-attempts and the body's attempts
// set to the counted value, then acknowledges it — when it has a retry
// producer (WithRetryProducer) or a client to build one from
// (WithRetryClient, WithRepublishRetries). Without one it negatively
// acknowledges, and the broker's redelivery count carries the attempts.
//
// Pulsar advances the redelivery count of a negatively acknowledged message
// only on Shared and KeyShared subscriptions. On Exclusive and Failover
// subscriptions (Exclusive is the client's default) a retry by negative
// acknowledgement would never reach the max attempts, so New refuses a
// configuration with max attempts above 1, no way to republish, and a
// subscription type that is Exclusive, Failover or not declared. Pulsar's
// native DeadLetterPolicy is not used: the App writes dead letters to
// "<queue>.dlq" itself, and a second, native limit would not be coordinated
// with it.
//
// # Ownership
//
// The Transport creates one producer per topic and one consumer per queue
// lazily and closes them on Close, together with the client when it built
// it from WithServiceURL. A client or producer given by the caller is never
// closed. After Close every call returns an error matching
// babelqueue.ErrClosed.
package pulsar
