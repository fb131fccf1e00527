package otel

import (
	"context"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"
)

// Redrive makes every decorator a babelqueue.Redriver, so that
// babelqueue.Redrive over a decorated transport keeps the guarantees of the
// wrapped one: a transport with its own redrive (Kafka's durable cursor,
// Pulsar's transactions) runs it, and any other gets the generic run
// through the decorator. The run is traced as one span "redrive <dlq>"
// with its counts, and each moved message is counted in
// babelqueue.messages.redriven once (a dry run counts nothing).
func (t *transport) Redrive(ctx context.Context, dlq string, plan babelqueue.RedrivePlan) (*babelqueue.RedriveResult, error) {
	ctx, span := t.tel.tracer.Start(ctx, "redrive "+dlq, trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(
		semconv.MessagingSystemKey.String(t.system),
		semconv.MessagingDestinationName(dlq),
		attribute.Bool("babelqueue.redrive.dry_run", plan.DryRun),
	))
	defer span.End()
	var res *babelqueue.RedriveResult
	var err error
	if rd, ok := t.inner.(babelqueue.Redriver); ok {
		// The wrapped redrive writes past the decorator: count its moves here.
		res, err = rd.Redrive(ctx, dlq, plan)
		t.tel.metrics.RedriveResult(ctx, t.system, res)
	} else {
		// The generic run writes through the decorator, whose settle writes
		// count each move.
		res, err = babelqueue.RunRedrive(ctx, t.outer, dlq, plan)
	}
	if res != nil {
		span.SetAttributes(
			attribute.Int("babelqueue.redrive.examined", res.Examined),
			attribute.Int("babelqueue.redrive.moved", res.Moved),
			attribute.Int("babelqueue.redrive.kept", res.Kept),
			attribute.Int("babelqueue.redrive.recovered", res.Recovered),
		)
	}
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, "redrive failed")
	}
	return res, err
}
