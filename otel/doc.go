// Package otel adds OpenTelemetry tracing and metrics to BabelQueue for Go
// without touching the envelope or the core module: everything rides on
// the out-of-band header seams of the Transport contract.
//
// # Wiring
//
//	tel, err := otel.New(otel.WithTracerProvider(tp), otel.WithMeterProvider(mp))
//	t := tel.Transport(kafkaTransport) // same optional capabilities as kafkaTransport
//	app := babelqueue.NewApp(t)
//	app.Handle(urn, tel.Middleware(handler))
//
// Transport returns a decorator that keeps exactly the optional
// capabilities of the transport it wraps, so the App behaves as it would on
// the bare transport. Middleware wraps a Handler.
//
// # Spans
//
// A publish (Publish, PublishWithHeaders, PublishDelayed,
// PublishDelayedWithHeaders of the decorated transport) gets a span
// "send <queue>" of kind Producer, a child of the span in the caller's
// context. Its W3C traceparent and tracestate are written as out-of-band
// headers (through PublishWithHeaders: a Publish is turned into a
// PublishWithHeaders when the wrapped transport is a
// babelqueue.HeaderPublisher, and a PublishDelayed into a
// PublishDelayedWithHeaders when it is a babelqueue.DelayedHeaderPublisher). Headers that already hold a traceparent are
// left alone: the caller, or a retry copying the original headers, owns the
// trace then.
//
// Every delivery read through the decorated transport's Pop gets a span
// "process <queue>" of kind Consumer, a child of the context carried by its
// traceparent header (the producer span), and ended when the App settles
// the delivery. The Middleware puts that span in the handler's context, so
// the handler's own spans are its children. A delivery that is a retry
// (attempts above zero) links to the process span of the attempt that
// failed before it, when that span is known: from the HeaderRetryLink
// header written on the retry copy, or from this process's memory of recent
// attempts. The retry, re-injection and dead-letter writes keep the original
// traceparent, so every attempt of a message belongs to one trace.
//
// A failed handler is recorded on the span as an exception event, without
// an error status: the status is Error only when the message is
// dead-lettered (failed, unknown URN, poison or version-gated), the one
// outcome an operator has to act upon.
//
// Span attributes follow the OpenTelemetry messaging semantic conventions
// (semconv v1.40.0):
//
//	messaging.system             kafka, pulsar, or WithSystem's value
//	messaging.destination.name   the queue (topic) written to or read from
//	messaging.operation.type     send (publish), process (a delivery)
//	messaging.operation.name     send, process
//	messaging.message.id         meta.id of the envelope
//
// and the BabelQueue ones (see the Attr* keys):
//
//	babelqueue.urn               the route (bq-job header, else the body's job)
//	babelqueue.attempt           attempts of the delivery (0 on the first)
//	babelqueue.trace_id          the envelope's trace_id
//	babelqueue.outcome           how the delivery was settled (Outcome*)
//	babelqueue.reason            why a message was retried or dead-lettered
//
// The convention's older operation value "publish" was renamed "send"; this
// package writes "send".
//
// # Metrics
//
// See Metrics for every instrument, its unit and its attributes. The
// decorator records them as it observes each delivery. The Kafka
// re-injector reports each record it carries back through the hook
// Telemetry.ReinjectObserver returns (give it to kafka.WithReinjectObserver);
// tools that work on a bare transport (a redrive CLI) call the Metrics
// methods directly.
package otel
