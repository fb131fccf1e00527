// Package conformance runs the BabelQueue conformance suite against the Go bindings.
package conformance
