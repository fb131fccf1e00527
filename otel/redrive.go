package otel

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/babelqueue/babelqueue-go/core/redrive"
)

// StartRedrive starts the span "redrive <dlq>" of one redrive run and
// returns the context to run it with and the function that ends it. The
// span is a child of the span in ctx; the function ends it with the run's
// result:
//
//	ctx, end := tel.StartRedrive(ctx, "orders.dlq")
//	res, err := app.Redrive(ctx, "orders.dlq") // an App with WithHooks(tel.Hooks())
//	end(res, err)
//
// The hooks count the moved messages (OnRedrive); the span carries the
// run's counts (babelqueue.redrive.examined, moved, kept, recovered,
// discarded, dry_run) and has status Error when err is not nil.
func (t *Telemetry) StartRedrive(ctx context.Context, dlq string) (context.Context, func(*redrive.Result, error)) {
	ctx, span := t.tracer.Start(ctx, "redrive "+dlq, trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(
		semconv.MessagingSystemKey.String(t.cfg.system),
		semconv.MessagingDestinationName(dlq),
	))
	return context.WithValue(ctx, redriveKey, span), func(res *redrive.Result, err error) {
		if res != nil {
			span.SetAttributes(
				attribute.Int("babelqueue.redrive.examined", res.Examined),
				attribute.Int("babelqueue.redrive.moved", res.Moved),
				attribute.Int("babelqueue.redrive.kept", res.Kept),
				attribute.Int("babelqueue.redrive.recovered", res.Recovered),
				attribute.Int("babelqueue.redrive.discarded", res.Discarded),
				attribute.Bool("babelqueue.redrive.dry_run", res.DryRun),
			)
		}
		if err != nil {
			span.RecordError(err)
			span.SetStatus(codes.Error, "redrive failed")
		}
		span.End()
	}
}
