// Package pulsar is the Apache Pulsar binding of BabelQueue (CONTRACT.md
// 5), built on github.com/apache/pulsar-client-go. A Transport implements
// babelqueue.Transport, so that a Go service exchanges messages over Pulsar
// with services written in the other BabelQueue SDKs:
//
//	tr, err := pulsar.New(
//		pulsar.WithServiceURL("pulsar://127.0.0.1:6650"),
//		pulsar.WithSubscriptionType(pulsarclient.Shared),
//	)
//	app, err := babelqueue.NewApp(tr)
//	if err != nil {
//		return err // every option problem, joined
//	}
//
// What the binding guarantees:
//   - the payload is the envelope's bytes; the properties bq-job,
//     bq-trace-id, bq-message-id, bq-schema-version, bq-source-lang and
//     bq-attempts are projected from the body (a field it lacks is not
//     written), out-of-band properties such as traceparent ride beside them
//     (a contract property wins a collision), and the event time is
//     meta.created_at; a delayed publish uses DeliverAfter;
//   - every write derived from a received message keeps its key and
//     ordering key;
//   - Pop (Receive) reconciles the attempts: the valid bq-attempts property,
//     else the body's attempts, and at least the redelivery count; a
//     version-gated message is handed over exactly as received;
//   - a retry republishes to the consumed topic and then acknowledges the
//     original when the Transport has a retry producer, and negatively
//     acknowledges it otherwise; New refuses a configuration whose retries
//     could never reach the max attempts (an Exclusive, Failover or
//     undeclared subscription type without a way to republish);
//   - a redrive (Transport.Redrive) neither loses nor duplicates a dead
//     letter, wherever it is interrupted;
//   - the Transport closes on Close what it created, never what it was
//     given; every later call fails with babelqueue.ErrClosed.
//
// The protocol details (the write of each intent, the attempts scan, the
// redrive journal and its subscriptions, connection-failure reporting) are
// in DESIGN.md.
package pulsar
