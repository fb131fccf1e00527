// Package otel adds OpenTelemetry tracing and metrics to BabelQueue for Go
// through the hooks of the core module: the App, Redrive and a binding's
// re-injector report their own decisions, and Telemetry turns each into
// spans and measurements. Nothing wraps the transport, so an App keeps
// every path of its binding, and no outcome is guessed from the traffic.
//
// # Wiring
//
//	tel, err := otel.New(otel.WithTracerProvider(tp), otel.WithMeterProvider(mp), otel.WithSystem("kafka"))
//	app, err := babelqueue.NewApp(transport, babelqueue.WithHooks(tel.Hooks()))
//	if err != nil {
//		return err // every option problem, joined
//	}
//	app.Handle(urn, handler) // tel.Middleware(handler) is optional
//
// The same tel.Hooks() value goes to redrive.WithHooks for a
// Redrive run on a bare transport, and to a binding's re-injector (the
// Kafka binding's WithReinjectHooks option).
//
// # Spans
//
// A new message gets a span "send <queue>" of kind Producer, a child of the
// span in the caller's context; its W3C trace context is written into the
// message's out-of-band headers, unless they already hold a traceparent
// (the caller's own). A binding without the Headers feature drops them, so
// the trace cannot travel with its messages.
//
// Every delivery gets a span "process <queue>" of kind Consumer, a child of
// the span its traceparent names, started when the App takes the delivery
// and ended when the App has settled it. The handler runs inside it, so
// its own spans are children. Retry, release and dead-letter writes keep
// the delivery's traceparent, so every attempt of a message is a child of
// its producer span, in one trace; they also carry HeaderRetryLink, and
// the next attempt's span links to the attempt that failed before it (from
// that header, or, when the broker redelivered the message itself, from
// this process's memory of recent attempts, WithLinkMemory).
//
// The process span's status is Error only when the message is
// dead-lettered, the one outcome an operator has to act upon; the failure
// behind any other outcome is an exception event.
//
// Span attributes follow the OpenTelemetry messaging semantic conventions
// (semconv v1.43.0): messaging.system, messaging.destination.name,
// messaging.operation.type and messaging.operation.name (send, process),
// messaging.message.id (meta.id); and the Attr* keys of this package.
//
// # Metrics
//
// The Metric* constants name every instrument; README.md gives the
// attributes of each and, for every outcome and reason the App reports,
// which counters move.
package otel
