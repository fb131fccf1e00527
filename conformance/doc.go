// Package conformance loads a BabelQueue conformance suite directory and runs
// its blocks against one or more bindings.
//
// A suite directory holds manifest.json, fixtures/*.json and
// schema/message-envelope.schema.json, in the format of the canonical
// BabelQueue conformance suite: a top-level "cases" array of envelope
// fixtures, and broker blocks such as "kafka" and "pulsar" whose members
// ("property_projection", "attempts_reconciliation", "schema_version_gate")
// are blocks of their own. This module's suite (DefaultSuite) adds a
// "babelqueue_go" object whose members cover every other rule of the
// contract; the format of each is documented in the suite's manifest.
//
// A block is named by its path in the manifest: "cases", "kafka.property_projection",
// "babelqueue_go.blank". A top-level object that holds a "cases" array
// directly (such as "roundtrip") is one block; any other top-level object is
// a group whose object-valued members are the blocks.
//
// A binding is anything with a Name. It takes part in a block by
// implementing that block's capability interface (EnvelopeDecoder,
// KafkaProjector, Classifier, ...). A block the binding does not implement,
// and a block this runner does not know, are reported as skipped — never as
// passed; a binding that implements Explainer says why it skips a block.
// Binding tests call Run, which also writes the report as JSON when
// BQ_CONFORMANCE_REPORT names a file; the bqconform command merges those
// reports (or runs the core binding itself) and prints the matrix, one
// column per binding.
package conformance
