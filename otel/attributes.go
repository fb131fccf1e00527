package otel

import "go.opentelemetry.io/otel/attribute"

// BabelQueue attribute keys, set beside the messaging semantic convention
// ones on spans and metrics.
const (
	// AttrURN is the message route: the bq-job header, else the body's job.
	AttrURN = attribute.Key("babelqueue.urn")
	// AttrAttempt is the attempts count of a delivery before it (0 on the
	// first delivery).
	AttrAttempt = attribute.Key("babelqueue.attempt")
	// AttrTraceID is the envelope's trace_id, the correlation id every
	// BabelQueue SDK carries unchanged.
	AttrTraceID = attribute.Key("babelqueue.trace_id")
	// AttrOutcome is how the App settled a delivery, as
	// babelqueue.Outcome.String() names it: handled, retried,
	// dead_lettered, dropped, released, deleted or handed_back.
	AttrOutcome = attribute.Key("babelqueue.outcome")
	// AttrReason is why a delivery was retried, dead-lettered, dropped,
	// released or deleted: babelqueue.Settlement.Reason (failed,
	// unknown_urn, poison, version_gated).
	AttrReason = attribute.Key("babelqueue.reason")
	// AttrTarget is the queue a settle write went to (the retry tier topic
	// the binding chose, the dead-letter queue, the released queue).
	AttrTarget = attribute.Key("babelqueue.target")
	// AttrDelayMS is the delay of a delayed publish or of a retry, in
	// milliseconds.
	AttrDelayMS = attribute.Key("babelqueue.delay_ms")
)

// HeaderRetryLink is the out-of-band header naming, in W3C traceparent
// form, the attempt that wrote a retry, release or dead-letter copy. The
// process span of the next delivery links to it. It is not a contract
// header, so the App copies it on like any other.
const HeaderRetryLink = "babelqueue-retry-link"
