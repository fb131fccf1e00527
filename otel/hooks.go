package otel

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"github.com/babelqueue/babelqueue-go/core/driver"
	"github.com/babelqueue/babelqueue-go/core/redrive"
	"github.com/babelqueue/babelqueue-go/core/wire"
)

// Hooks is the babelqueue hook value of a Telemetry (Telemetry.Hooks). It
// implements PublishHook, PublishedHook, DeliveryHook, SettleHook,
// RedriveHook, ReinjectHook and ReinjectBacklogHook. Each method only
// starts, annotates or ends a span and records measurements: it never
// fails, never blocks on I/O and keeps nothing it is handed past the call
// but span contexts and the latest backlog sample.
type Hooks struct{ t *Telemetry }

var (
	_ babelqueue.PublishHook   = (*Hooks)(nil)
	_ babelqueue.PublishedHook = (*Hooks)(nil)
	_ babelqueue.DeliveryHook  = (*Hooks)(nil)
	_ babelqueue.SettleHook    = (*Hooks)(nil)
	_ babelqueue.RedriveHook   = (*Hooks)(nil)
	_ driver.ReinjectHook      = (*Hooks)(nil)
)

type ctxKey uint8

const (
	deliveryKey ctxKey = iota + 1 // *delivery, from OnDelivery to OnSettle
	sendKey                       // the *send of a new message, from OnPublish to OnPublished
	redriveKey                    // the span of a StartRedrive run
)

// delivery is what the hooks know of one delivery between OnDelivery and
// OnSettle.
type delivery struct {
	span trace.Span
	// linked: the span links to the previous attempt (HeaderRetryLink).
	linked bool
	// copied: a retry or dead-letter copy was asked for, so the handler,
	// when it ran, failed.
	copied atomic.Bool
	// wrapped: Middleware ran the handler and set failed.
	wrapped atomic.Bool
	failed  atomic.Bool
	// group is the delivery's consumer group (ReceivedMessage.Group).
	group string
}

// send is what the hooks know of one publish between OnPublish and
// OnPublished.
type send struct {
	span  trace.Span
	start time.Time
}

func deliveryOf(ctx context.Context) *delivery {
	d, _ := ctx.Value(deliveryKey).(*delivery)
	return d
}

// OnPublish starts the producer span "send <queue>" of a new message and
// writes its trace context into out.Headers. A traceparent already there,
// the caller's own, is kept. A settle write keeps the traceparent of the
// delivery it copies (the App copied it into out.Headers), so that every
// attempt stays in the message's trace; a retry, release or dead letter
// also gets HeaderRetryLink naming the attempt that wrote it. IntentForward
// is written exactly as received: nothing is added.
func (h *Hooks) OnPublish(ctx context.Context, out *driver.Outgoing) context.Context {
	t := h.t
	switch out.Intent {
	case driver.IntentPublish:
		p := wire.ProjectBody([]byte(out.Body))
		attrs := make([]attribute.KeyValue, 0, 8)
		attrs = append(attrs,
			semconv.MessagingSystemKey.String(t.cfg.system),
			semconv.MessagingDestinationName(out.Queue),
			semconv.MessagingOperationTypeSend,
			semconv.MessagingOperationName(operationSend))
		if p.MessageID != "" {
			attrs = append(attrs, semconv.MessagingMessageID(p.MessageID))
		}
		if p.Job != "" {
			attrs = append(attrs, AttrURN.String(p.Job))
		}
		if p.TraceID != "" {
			attrs = append(attrs, AttrTraceID.String(p.TraceID))
		}
		if out.Delay > 0 {
			attrs = append(attrs, AttrDelayMS.Int64(out.Delay.Milliseconds()))
		}
		ctx, span := t.tracer.Start(ctx, "send "+out.Queue, trace.WithSpanKind(trace.SpanKindProducer), trace.WithAttributes(attrs...))
		if _, ok := out.Headers[wire.HeaderTraceparent]; !ok {
			t.prop.Inject(ctx, headerCarrier(out.Headers))
		}
		return context.WithValue(ctx, sendKey, &send{span: span, start: t.cfg.now()})
	case driver.IntentRetry, driver.IntentRelease, driver.IntentDeadLetter:
		d := deliveryOf(ctx)
		if d == nil {
			return ctx
		}
		if out.Intent != driver.IntentRelease {
			d.copied.Store(true)
		}
		if sc := d.span.SpanContext(); sc.IsValid() {
			if _, ok := out.Headers[wire.HeaderTraceparent]; !ok {
				// A message that came without trace context continues
				// the trace of this attempt.
				t.prop.Inject(ctx, headerCarrier(out.Headers))
			}
			out.Headers[HeaderRetryLink] = formatLink(sc)
		}
	}
	return ctx
}

// OnPublished ends the producer span of a new message, counting it in
// MetricSentMessages and measuring MetricOperationDuration. The count has
// error.type when the broker did not acknowledge the message. A settle
// write becomes an event on the process span of its delivery.
func (h *Hooks) OnPublished(ctx context.Context, out *driver.Outgoing, r driver.Receipt, err error) {
	t := h.t
	queue := out.Queue
	if r.Queue != "" {
		queue = r.Queue
	}
	if out.Intent == driver.IntentPublish {
		s, _ := ctx.Value(sendKey).(*send)
		var errType attribute.KeyValue
		if err != nil {
			errType = semconv.ErrorType(err)
			if s != nil {
				s.span.SetAttributes(errType)
				s.span.RecordError(err)
				s.span.SetStatus(codes.Error, "publish failed")
			}
		}
		// Counted before the span ends, so that an exported span
		// implies a counted message.
		opt := t.attrs.at(queue, semconv.MessagingOperationName(operationSend), errType)
		t.m.sent.Add(ctx, 1, opt)
		if s != nil {
			seconds(ctx, t.m.operationDuration, t.cfg.now().Sub(s.start),
				t.attrs.at(queue, semconv.MessagingOperationName(operationSend), semconv.MessagingOperationTypeSend, errType))
			s.span.End()
		}
		return
	}
	d := deliveryOf(ctx)
	if d == nil {
		return
	}
	attrs := []attribute.KeyValue{attribute.String("babelqueue.intent", out.Intent.String()), semconv.MessagingDestinationName(queue)}
	if err != nil {
		d.span.AddEvent("babelqueue.settle_write_failed", trace.WithAttributes(append(attrs, attribute.String("error", err.Error()))...))
		return
	}
	d.span.AddEvent("babelqueue."+out.Intent.String(), trace.WithAttributes(attrs...))
}

// OnDelivery starts the process span "process <queue>" of a delivery, a
// child of the span its traceparent names. It is a root when there is none,
// and links to the failed attempt its HeaderRetryLink names. The span is in
// the context the handler and OnSettle receive.
func (h *Hooks) OnDelivery(ctx context.Context, d *babelqueue.Delivery) context.Context {
	t := h.t
	// The consumer's own span is not the parent of a delivery: hide it,
	// then take the remote parent from the headers.
	ctx = t.prop.Extract(trace.ContextWithSpanContext(ctx, trace.SpanContext{}), messageCarrier{d.Message})
	st := &delivery{}
	rec, group := recordAttrs(t.cfg.system, d.Message)
	st.group = group
	opts := make([]trace.SpanStartOption, 0, 3)
	opts = append(opts, trace.WithSpanKind(trace.SpanKindConsumer), trace.WithAttributes(append(rec,
		semconv.MessagingSystemKey.String(t.cfg.system),
		semconv.MessagingDestinationName(d.Queue),
		semconv.MessagingOperationTypeProcess,
		semconv.MessagingOperationName(operationProcess))...))
	if v, ok := d.Message.Header(HeaderRetryLink); ok {
		if sc, ok := parseLink(v); ok {
			st.linked = true
			opts = append(opts, trace.WithLinks(previousAttempt(sc)))
		}
	}
	ctx, st.span = t.tracer.Start(ctx, "process "+d.Queue, opts...)
	return context.WithValue(ctx, deliveryKey, st)
}

func previousAttempt(sc trace.SpanContext) trace.Link {
	return trace.Link{SpanContext: sc, Attributes: []attribute.KeyValue{attribute.String("babelqueue.link", "previous_attempt")}}
}

// OnSettle counts the settlement exactly as the App reports it, records the
// handler's duration when it ran, and ends the process span. README.md has
// the outcome table. The span's status is Error only for a dead-lettered
// delivery.
func (h *Hooks) OnSettle(ctx context.Context, dl *babelqueue.Delivery, s *babelqueue.Settlement) {
	t := h.t
	queue := dl.Queue
	outcome := AttrOutcome.String(s.Outcome.String())
	reason := AttrReason.String(s.Reason)
	target := AttrTarget.String(s.Target)
	d := deliveryOf(ctx)
	var group attribute.KeyValue
	if d != nil {
		group = optional(semconv.MessagingConsumerGroupNameKey, d.group)
	} else if dl.Message != nil && dl.Message.Group != "" {
		group = semconv.MessagingConsumerGroupName(dl.Message.Group)
	}
	errType := optional(semconv.ErrorTypeKey, settleErrorType(s))

	t.m.consumed.Add(ctx, 1, t.attrs.at(queue, semconv.MessagingOperationName(operationProcess), outcome,
		optional(AttrReason, s.Reason), errType, group))
	switch s.Outcome {
	case babelqueue.OutcomeRetried:
		t.m.retried.Add(ctx, 1, t.attrs.at(queue, reason, target))
	case babelqueue.OutcomeDeadLettered:
		t.m.deadLettered.Add(ctx, 1, t.attrs.at(queue, reason, target))
	}
	switch s.Reason {
	case wire.ReasonPoison:
		t.m.poison.Add(ctx, 1, t.attrs.at(queue))
	case wire.ReasonVersionGated:
		t.m.versionGated.Add(ctx, 1, t.attrs.at(queue))
	}
	failed := handlerFailed(d, s)
	if s.HandlerRan {
		var handlerErr attribute.KeyValue
		if failed {
			handlerErr = handlerErrorType(s.HandlerErr)
		}
		seconds(ctx, t.m.processDuration, s.HandlerDuration, t.attrs.at(queue,
			semconv.MessagingOperationName(operationProcess), optional(AttrURN, dl.URN), handlerErr, group))
	}
	if d == nil {
		return
	}

	span := d.span
	attrs := make([]attribute.KeyValue, 0, 9)
	attrs = append(attrs, outcome)
	if s.Reason != "" {
		attrs = append(attrs, reason)
	}
	if s.Target != "" {
		attrs = append(attrs, target)
	}
	if errType.Key != "" {
		attrs = append(attrs, errType)
	}
	if s.Delay > 0 {
		attrs = append(attrs, AttrDelayMS.Int64(s.Delay.Milliseconds()))
	}
	if s.Deliveries > 0 {
		attrs = append(attrs, AttrAttempt.Int(s.Deliveries-1))
	}
	if dl.URN != "" {
		attrs = append(attrs, AttrURN.String(dl.URN))
	}
	var id string
	if env := dl.Envelope; env != nil {
		id = env.Meta.ID
		attrs = append(attrs, semconv.MessagingMessageID(id))
		if env.TraceID != "" {
			attrs = append(attrs, AttrTraceID.String(env.TraceID))
		}
	}
	span.SetAttributes(attrs...)
	if sc, ok := t.links.take(id); ok && !d.linked {
		span.AddLink(previousAttempt(sc))
	}
	switch {
	case s.Outcome == babelqueue.OutcomeHandedBack && s.Err != nil:
		span.AddEvent("babelqueue.settle_failed", trace.WithAttributes(attribute.String("error", s.Err.Error())))
	case s.Err != nil && !(d.wrapped.Load() && s.Reason == wire.ReasonFailed):
		// Middleware already recorded the handler's own error.
		span.RecordError(s.Err)
	}
	if s.Outcome == babelqueue.OutcomeDeadLettered {
		span.SetStatus(codes.Error, "dead-lettered: "+s.Reason)
	}
	switch s.Outcome {
	case babelqueue.OutcomeRetried, babelqueue.OutcomeReleased:
		t.links.put(id, span.SpanContext())
	case babelqueue.OutcomeHandedBack:
		if failed {
			t.links.put(id, span.SpanContext())
		}
	}
	span.End()
}

// handlerFailed reports whether the handler of a settled delivery failed:
// what Middleware saw when it ran the handler, else what the App's
// decision implies. Without Middleware one case reads as a success: a
// failed handler whose message was dropped (dead-lettering off, attempts
// exhausted) and whose acknowledgement then failed.
func handlerFailed(d *delivery, s *babelqueue.Settlement) bool {
	if !s.HandlerRan {
		return false
	}
	if s.HandlerErr != nil {
		return true
	}
	if d != nil && d.wrapped.Load() {
		return d.failed.Load()
	}
	switch s.Outcome {
	case babelqueue.OutcomeHandled:
		return false
	case babelqueue.OutcomeHandedBack:
		// Handed back with no error: the handler failed as the consumer
		// stopped. With an error and no copy asked for: the
		// acknowledgement of a handled message failed.
		return s.Err == nil || (d != nil && d.copied.Load())
	}
	return true
}

// OnRedrive counts a dead letter a Redrive run moved in MetricRedriven,
// under its target queue. The items it kept, would move (a dry run), found
// already moved or discarded (a discard run) are not counted. A failed item
// is an event on the run's span when the run was started with StartRedrive.
func (h *Hooks) OnRedrive(ctx context.Context, dlq string, it redrive.Item) {
	if it.Outcome == redrive.Moved {
		h.t.m.redriven.Add(ctx, 1, h.t.attrs.at(it.Target))
	}
	if it.Outcome == redrive.Failed {
		if span, ok := ctx.Value(redriveKey).(trace.Span); ok {
			attrs := []attribute.KeyValue{semconv.MessagingDestinationName(dlq), attribute.String("babelqueue.redrive.position", it.Position)}
			if it.Err != nil {
				attrs = append(attrs, attribute.String("error", it.Err.Error()))
			}
			span.AddEvent("babelqueue.redrive_failed", trace.WithAttributes(attrs...))
		}
	}
}

// OnReinject records MetricReinjectLag for a retry record a re-injector
// carried back to its work queue; a failed carry is not measured.
func (h *Hooks) OnReinject(ctx context.Context, r *driver.Reinjection) {
	if r.Err == nil {
		seconds(ctx, h.t.m.lag, r.Lag, h.t.attrs.at(r.Queue))
	}
}

// settleErrorType is the error.type of a settled delivery: the reason of
// one retried, dead-lettered or dropped (failed, unknown_urn, poison,
// invalid_payload, decrypt_failed,
// version_gated); settle_failed for one handed back because a settle call
// failed; none otherwise (handled, released, deleted, or handed back as
// the consumer stopped).
func settleErrorType(s *babelqueue.Settlement) string {
	switch s.Outcome {
	case babelqueue.OutcomeRetried, babelqueue.OutcomeDeadLettered, babelqueue.OutcomeDropped:
		return s.Reason
	case babelqueue.OutcomeHandedBack:
		if s.Err != nil && errors.Is(s.Err, babelqueue.ErrSettle) {
			return errorTypeSettleFailed
		}
	}
	return ""
}

// errorTypeSettleFailed is the error.type of a delivery handed back
// because its acknowledgement or settle write failed.
const errorTypeSettleFailed = "settle_failed"

// handlerErrorType is the error.type of a failed handler call: the type
// of the error it returned (semconv.ErrorType), "_OTHER" when the hooks
// only know that it failed.
func handlerErrorType(err error) attribute.KeyValue {
	return semconv.ErrorType(err)
}
