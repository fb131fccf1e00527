// Package babelqueue is the core of BabelQueue for Go: the canonical JSON
// envelope, the attempts and dead-letter rules shared by every broker binding,
// the Transport contract, and the App runtime that routes messages to handlers.
//
// The package depends on the standard library only. Broker bindings live in
// their own modules (github.com/babelqueue/babelqueue-go/kafka and
// github.com/babelqueue/babelqueue-go/pulsar) so that a service downloads only
// the broker client it uses.
package babelqueue
