// Package orderstatus is the order status processor: a runnable BabelQueue
// example that projects order events into a status table and shows how a
// Kafka consumer retries and dead-letters records without losing any.
//
// One process consumes two topics, the events topic (orders.events) and the
// retry topic (orders.retry), through one consumer group, and keeps no state
// of its own: everything it needs to retry a record travels in the record's
// retry.* headers. Order events are BabelQueue envelopes
// (urn:babel:orders:created, :paid, :shipped, :delivered, :cancelled) so that
// any BabelQueue SDK can produce them; the codec of the core module reads them.
//
// Every record ends in exactly one of these outcomes (Projector.Process):
//
//	the record                                         then
//	malformed, or of an unknown type                   a dead letter, at once
//	projected, or applied already                      committed
//	unavailable or invalid-transition, attempts left   produced to the retry topic, one attempt higher
//	the same, on its last attempt (RETRY_ATTEMPTS)     a dead letter with that attempt's reason
//	its context ended (shutdown)                       not committed: processed again
//	neither the retry nor the dead-letter topic took it  Run returns the error (the process exits 1)
//
// A retried record waits until its timestamp plus a backoff that starts at
// RETRY_MIN_DELAY and doubles each attempt up to RETRY_MAX_DELAY. Offsets are
// committed only for settled records, in partition order (at-least-once).
//
// The projection (Store) is a status state machine kept in SQLite through the
// pure-Go modernc.org/sqlite driver; a store error makes the attempt
// unavailable, an event that does not follow the order's current status makes
// it an invalid transition, and a later retry may succeed once the event's
// predecessor has been projected.
package orderstatus
