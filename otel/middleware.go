package otel

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
)

// Middleware wraps h so that its error or panic is recorded on the process
// span as an exception event. A panic is re-raised for the App to recover.
// It is optional: the hooks count every outcome and measure every handler
// exactly without it.
//
// In an App with this Telemetry's hooks, the handler already runs inside
// the delivery's process span; Middleware adds only the exact handler
// result (success or error) to MetricHandlerDuration, which the hooks
// otherwise infer from the settlement (see Hooks.OnSettle). Without the
// hooks, Middleware starts a Consumer span of its own, a child of the
// trace context in the delivered headers, ends it when h returns and
// records the handler's duration itself; such a span never has an error
// status, since only the App knows whether the failure is retried or
// dead-lettered.
func (t *Telemetry) Middleware(h babelqueue.Handler) babelqueue.Handler {
	if h == nil {
		return nil
	}
	return func(ctx context.Context, env *babelqueue.Envelope) (err error) {
		d := deliveryOf(ctx)
		var span trace.Span
		if d != nil {
			d.wrapped.Store(true)
			span = d.span
		} else {
			parent := t.prop.Extract(trace.ContextWithSpanContext(ctx, trace.SpanContext{}), headerCarrier(babelqueue.HeadersFromContext(ctx)))
			ctx, span = t.tracer.Start(parent, "process "+env.Meta.Queue,
				trace.WithSpanKind(trace.SpanKindConsumer),
				trace.WithAttributes(
					semconv.MessagingSystemKey.String(t.cfg.system),
					semconv.MessagingDestinationName(env.Meta.Queue),
					semconv.MessagingOperationTypeProcess,
					semconv.MessagingOperationName(operationProcess),
					semconv.MessagingMessageID(env.Meta.ID),
					AttrURN.String(env.URN()),
					AttrAttempt.Int(env.Attempts),
					AttrTraceID.String(env.TraceID),
				))
		}
		start := t.cfg.now()
		defer func() {
			p := recover()
			failed := err != nil || p != nil
			switch {
			case p != nil:
				span.AddEvent("exception", trace.WithAttributes(
					attribute.String("exception.type", "panic"),
					attribute.String("exception.message", panicText(p))))
			case err != nil:
				span.RecordError(err)
			}
			if d != nil {
				d.failed.Store(failed)
			} else {
				var errType attribute.KeyValue
				switch {
				case p != nil:
					errType = semconv.ErrorTypeKey.String(panicErrorType)
				case err != nil:
					errType = handlerErrorType(err)
				}
				seconds(ctx, t.m.processDuration, t.cfg.now().Sub(start), t.attrs.at(env.Meta.Queue,
					semconv.MessagingOperationName(operationProcess), optional(AttrURN, env.URN()), errType))
				span.End()
			}
			if p != nil {
				panic(p)
			}
		}()
		return h(ctx, env)
	}
}

// panicErrorType is the error.type of a handler that panicked: the type
// of the error the App turns the panic into.
var panicErrorType = fmt.Sprintf("%T", (*babelqueue.PanicError)(nil))

func panicText(p any) string {
	switch v := p.(type) {
	case error:
		return v.Error()
	case string:
		return v
	}
	return "handler panicked"
}
