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
package babelqueue
