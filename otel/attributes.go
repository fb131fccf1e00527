package otel

import "go.opentelemetry.io/otel/attribute"

// BabelQueue attribute keys, set beside the messaging semantic convention
// ones on spans and metrics.
const (
	// AttrURN is the message route: the bq-job header, else the body's job.
	AttrURN = attribute.Key("babelqueue.urn")
	// AttrAttempt is the attempts count of a delivery (0 on the first).
	AttrAttempt = attribute.Key("babelqueue.attempt")
	// AttrTraceID is the envelope's trace_id, the correlation id every
	// BabelQueue SDK carries unchanged.
	AttrTraceID = attribute.Key("babelqueue.trace_id")
	// AttrOutcome is how a delivery was settled: one of the Outcome values.
	AttrOutcome = attribute.Key("babelqueue.outcome")
	// AttrReason is why a message was retried or dead-lettered: a
	// dead_letter.reason (failed, unknown_urn, poison) or ReasonVersionGated.
	AttrReason = attribute.Key("babelqueue.reason")
	// AttrHandlerOutcome is the result of one handler call: "success" or
	// "error".
	AttrHandlerOutcome = attribute.Key("babelqueue.handler.outcome")
)

// Outcomes of a delivery (AttrOutcome).
const (
	// OutcomeSuccess: the handler succeeded and the message was acknowledged.
	OutcomeSuccess = "success"
	// OutcomeRetried: a copy with one more attempt was written (retry
	// topic, republish, Retrier) and the original settled.
	OutcomeRetried = "retried"
	// OutcomeDeadLettered: the message was written to its dead-letter queue.
	OutcomeDeadLettered = "dead_lettered"
	// OutcomeDropped: acknowledged without success nor replacement (unknown
	// URN deleted, attempts exhausted or version-gated with dead-lettering
	// off).
	OutcomeDropped = "dropped"
	// OutcomeReleased: handed back to its queue unchanged (StrategyRelease).
	OutcomeReleased = "released"
	// OutcomeRedriven: a dead letter moved back to work by Redrive.
	OutcomeRedriven = "redriven"
	// OutcomeRequeued: handed back unsettled (Rewind or Nack), for instance
	// after a failed settle write or at shutdown; it will be delivered again.
	OutcomeRequeued = "requeued"
	// OutcomeUnsettled: the delivery was never settled through this
	// decorator before the next read of its queue; the broker redelivers it.
	OutcomeUnsettled = "unsettled"
)

// ReasonVersionGated is the AttrReason of a message the version gate sent
// to the dead-letter queue as received (it has no dead_letter block).
const ReasonVersionGated = "version_gated"

// HeaderRetryLink is the out-of-band header a retry copy carries, when the
// retry path lets the decorator add one, with the span context of the
// failed attempt in W3C traceparent form. The next attempt's process span
// links to it. It is not a contract header, so the App copies it on.
const HeaderRetryLink = "babelqueue-retry-link"
