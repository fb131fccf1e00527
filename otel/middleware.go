package otel

import (
	"context"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"
)

// Middleware wraps h so that it runs inside the process span of its
// delivery and its duration is measured (MetricHandlerDuration).
//
// Over a transport decorated by the same Telemetry the span is the one the
// decorator started when the message was read (found by meta.id), so that
// it also covers the settlement and carries its outcome. Otherwise
// Middleware starts a Consumer span of its own, a child of the trace
// context in the delivered headers (babelqueue.HeadersFromContext), and
// ends it when h returns; such a span never has an error status, since
// only the App knows whether the failure is retried or dead-lettered.
//
// A handler error or panic is recorded on the span as an exception event;
// a panic is re-raised for the App to recover.
func (t *Telemetry) Middleware(h babelqueue.Handler) babelqueue.Handler {
	if h == nil {
		return nil
	}
	t.middlewareUsed.Store(true)
	return func(ctx context.Context, env *babelqueue.Envelope) (err error) {
		var (
			d      *delivery
			span   trace.Span
			system = t.cfg.system
			queue  = env.Meta.Queue
			own    bool
		)
		if d = t.reg.lookupID(env.Meta.ID); d != nil {
			span, system, queue = d.span, d.system, d.queue
			t.reg.with(func() { d.handlerRan = true })
		} else {
			if system == "" {
				system = DefaultSystem
			}
			own = true
			parent := t.extract(ctx, babelqueue.HeadersFromContext(ctx))
			_, span = t.tracer.Start(parent, "process "+queue,
				trace.WithSpanKind(trace.SpanKindConsumer),
				trace.WithAttributes(
					semconv.MessagingSystemKey.String(system),
					semconv.MessagingDestinationName(queue),
					semconv.MessagingOperationTypeProcess,
					semconv.MessagingOperationName("process"),
					semconv.MessagingMessageID(env.Meta.ID),
					AttrURN.String(env.URN()),
					AttrAttempt.Int(env.Attempts),
					AttrTraceID.String(env.TraceID),
				))
		}
		urn := env.URN()
		start := t.cfg.now()
		defer func() {
			p := recover()
			failed := err != nil || p != nil
			t.metrics.HandlerDuration(ctx, system, queue, urn, t.cfg.now().Sub(start), failed)
			if d != nil {
				t.reg.with(func() { d.handlerFailed = failed })
			}
			switch {
			case p != nil:
				span.AddEvent("exception", trace.WithAttributes(
					attribute.String("exception.type", "panic"),
					attribute.String("exception.message", panicText(p))))
			case err != nil:
				span.RecordError(err)
			}
			if own {
				span.End()
			}
			if p != nil {
				panic(p)
			}
		}()
		return h(trace.ContextWithSpan(ctx, span), env)
	}
}

func panicText(p any) string {
	switch v := p.(type) {
	case error:
		return v.Error()
	case string:
		return v
	}
	return "handler panicked"
}
