// Package babelqueue is what a service author uses of BabelQueue for Go:
// the App runtime that publishes messages and routes deliveries to
// handlers, its options and hooks, and the canonical Envelope (Make,
// Decode).
//
// The rest of the core module sits in packages of its own, as
// database/sql/driver sits beside database/sql:
//   - wire: the envelope codec and the body rules every binding shares
//     (header names, projection, attempts reconciliation, dead-letter and
//     poison bodies);
//   - driver: the contract a broker binding implements (Transport,
//     Outgoing, ReceivedMessage);
//   - redrive: moving dead letters back (App.Redrive delegates to it);
//   - bqtest: the test kit, an in-memory Transport and a fake clock.
//
// The module depends on the standard library only. Broker bindings live in
// their own modules (github.com/babelqueue/babelqueue-go/kafka and
// github.com/babelqueue/babelqueue-go/pulsar) so that a service downloads
// only the broker client it uses. core/DESIGN.md describes the layering.
//
// # Attempts and deliveries
//
// The envelope's attempts is the contract's retry counter: a handler sees
// 0 on the first delivery, 1 on the first retry, and so on. Logs and hooks
// count deliveries instead, the delivery in hand included: the log
// attribute "deliveries" and Settlement.Deliveries are attempts + 1.
// WithMaxAttempts bounds deliveries, and a retry copy or dead letter
// written for a delivery carries its deliveries as its attempts, so with
// WithMaxAttempts(3) a handler sees attempts 0, 1 and 2, the log line of
// the dead letter says deliveries=3, and the dead letter holds attempts 3.
//
// # Stopping a long-running call
//
// Every call of the BabelQueue modules that runs until its caller stops it
// follows one rule: when its context ends, cancelled or past its deadline,
// it finishes what it must (settles or hands back what it holds, flushes
// commits), then returns nil. That is a normal stop, not a failure: an
// error from such a call always means it stopped on its own, for a reason
// the error gives. App.Consume, the
// Kafka binding's Reinjector.Run, the Pulsar binding's Consumer.Run and the
// outbox module's Relay.Run are such calls; a caller checks their error
// without filtering context.Canceled or context.DeadlineExceeded.
//
// A call that does bounded work (App.Drain, App.Redrive, a publish) is not
// stopped but interrupted by the end of its context: it returns an error
// wrapping the context's error, since its work is unfinished.
package babelqueue
