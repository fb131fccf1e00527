package otel

import (
	"context"
	"errors"
	"maps"
	"reflect"
	"strings"
	"time"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"
)

//go:generate go run ./internal/gencaps -o capabilities_gen.go

// transport is the decorator core: the babelqueue.Transport methods and
// the implementation of every optional capability. wrapCapabilities
// (capabilities_gen.go) exposes only the capabilities inner has.
type transport struct {
	tel    *Telemetry
	inner  babelqueue.Transport
	system string
	outer  babelqueue.Transport // the decorator wrapCapabilities made of this
}

// Unwrap returns the decorated transport.
func (t *transport) Unwrap() babelqueue.Transport { return t.inner }

// inferSystem names messaging.system after the package of the transport.
func inferSystem(inner babelqueue.Transport) string {
	typ := reflect.TypeOf(inner)
	for typ.Kind() == reflect.Pointer {
		typ = typ.Elem()
	}
	switch path := typ.PkgPath(); {
	case path == "github.com/babelqueue/babelqueue-go/kafka" || strings.HasSuffix(path, "/kafka"):
		return "kafka"
	case path == "github.com/babelqueue/babelqueue-go/pulsar" || strings.HasSuffix(path, "/pulsar"):
		return "pulsar"
	}
	return DefaultSystem
}

// ---- publishing ----

// startSend starts the producer span of a publish of body to queue.
func (t *transport) startSend(ctx context.Context, queue string, p babelqueue.Projection) (context.Context, trace.Span) {
	attrs := []attribute.KeyValue{
		semconv.MessagingSystemKey.String(t.system),
		semconv.MessagingDestinationName(queue),
		semconv.MessagingOperationTypeSend,
		semconv.MessagingOperationName("send"),
	}
	if p.MessageID != "" {
		attrs = append(attrs, semconv.MessagingMessageID(p.MessageID))
	}
	if p.Job != "" {
		attrs = append(attrs, AttrURN.String(p.Job))
	}
	if p.TraceID != "" {
		attrs = append(attrs, AttrTraceID.String(p.TraceID))
	}
	return t.tel.tracer.Start(ctx, "send "+queue, trace.WithSpanKind(trace.SpanKindProducer), trace.WithAttributes(attrs...))
}

// endSend ends a producer span with the result of the write.
func (t *transport) endSend(ctx context.Context, span trace.Span, queue string, err error) error {
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, "publish failed")
	} else {
		t.tel.metrics.Published(ctx, t.system, queue)
	}
	span.End()
	return err
}

// settleOf returns the open delivery body is a settle write of (a retry,
// release or dead-letter copy the App writes through Publish or
// PublishWithHeaders when the transport cannot republish by key), or nil
// for a new message.
func (t *transport) settleOf(queue, body, msgID string) *delivery {
	d := t.tel.reg.lookupID(msgID)
	if d == nil {
		return nil
	}
	if queue == d.queue {
		return d
	}
	if _, ok := babelqueue.DeadLetterOf([]byte(body)); ok {
		return d
	}
	return nil
}

// Publish writes a new message with a producer span; its trace context goes
// out as headers when inner is a HeaderPublisher.
func (t *transport) Publish(ctx context.Context, queue, body string) error {
	p := babelqueue.ProjectBody([]byte(body))
	if d := t.settleOf(queue, body, p.MessageID); d != nil {
		return t.settleWrite(ctx, d, queue, body, nil, false, func(_ map[string]string) error {
			return t.inner.Publish(ctx, queue, body)
		})
	}
	ctx, span := t.startSend(ctx, queue, p)
	var err error
	if hp, ok := t.inner.(babelqueue.HeaderPublisher); ok {
		err = hp.PublishWithHeaders(ctx, queue, body, t.tel.inject(ctx, nil))
	} else {
		err = t.inner.Publish(ctx, queue, body)
	}
	return t.endSend(ctx, span, queue, err)
}

func (t *transport) publishWithHeaders(ctx context.Context, queue, body string, headers map[string]string) error {
	hp := t.inner.(babelqueue.HeaderPublisher)
	p := babelqueue.ProjectBody([]byte(body))
	if d := t.settleOf(queue, body, p.MessageID); d != nil {
		return t.settleWrite(ctx, d, queue, body, headers, false, func(h map[string]string) error {
			return hp.PublishWithHeaders(ctx, queue, body, h)
		})
	}
	ctx, span := t.startSend(ctx, queue, p)
	if _, ok := headers[babelqueue.HeaderTraceparent]; !ok {
		headers = t.tel.inject(ctx, headers)
	}
	return t.endSend(ctx, span, queue, hp.PublishWithHeaders(ctx, queue, body, headers))
}

// publishDelayed writes a delayed message with a producer span; its trace
// context goes out as headers when inner is a DelayedHeaderPublisher (a
// bare DelayedPublisher carries none, so the trace cannot travel then).
func (t *transport) publishDelayed(ctx context.Context, queue, body string, delay time.Duration) error {
	ctx, span := t.startDelayedSend(ctx, queue, body, delay)
	var err error
	if dh, ok := t.inner.(babelqueue.DelayedHeaderPublisher); ok {
		err = dh.PublishDelayedWithHeaders(ctx, queue, body, delay, t.tel.inject(ctx, nil))
	} else {
		err = t.inner.(babelqueue.DelayedPublisher).PublishDelayed(ctx, queue, body, delay)
	}
	return t.endSend(ctx, span, queue, err)
}

func (t *transport) publishDelayedWithHeaders(ctx context.Context, queue, body string, delay time.Duration, headers map[string]string) error {
	dh := t.inner.(babelqueue.DelayedHeaderPublisher)
	ctx, span := t.startDelayedSend(ctx, queue, body, delay)
	if _, ok := headers[babelqueue.HeaderTraceparent]; !ok {
		headers = t.tel.inject(ctx, headers)
	}
	return t.endSend(ctx, span, queue, dh.PublishDelayedWithHeaders(ctx, queue, body, delay, headers))
}

// startDelayedSend starts the producer span of a delayed publish.
func (t *transport) startDelayedSend(ctx context.Context, queue, body string, delay time.Duration) (context.Context, trace.Span) {
	ctx, span := t.startSend(ctx, queue, babelqueue.ProjectBody([]byte(body)))
	span.SetAttributes(attribute.Int64("babelqueue.delay_ms", delay.Milliseconds()))
	return ctx, span
}

// ---- consuming ----

// Pop reads through inner and starts the process span of the delivery, a
// child of the producer span its traceparent names.
func (t *transport) Pop(ctx context.Context, queue string, timeout time.Duration) (*babelqueue.ReceivedMessage, error) {
	msg, err := t.inner.Pop(ctx, queue, timeout)
	if err != nil || msg == nil {
		return msg, err
	}
	q := msg.Queue
	if q == "" {
		q = queue
	}
	d := &delivery{msg: msg, system: t.system, queue: q}
	p := babelqueue.ProjectBody([]byte(msg.Body))
	d.msgID = p.MessageID
	d.urn = p.Job
	if h, ok := msg.Header(babelqueue.HeaderJob); ok && !babelqueue.IsBlank(h) {
		d.urn = h
	}
	if n, ok := babelqueue.ParseAttemptsHeader(p.Attempts); ok {
		d.attempt = n
	} else if h, ok := msg.Header(babelqueue.HeaderAttempts); ok {
		d.attempt, _ = babelqueue.ParseAttemptsHeader(h)
	}
	d.class = classify(msg)
	switch d.class {
	case babelqueue.ClassPoison:
		t.tel.metrics.Poison(ctx, t.system, q)
	case babelqueue.ClassUnsupportedVersion:
		t.tel.metrics.VersionGated(ctx, t.system, q)
	}

	attrs := []attribute.KeyValue{
		semconv.MessagingSystemKey.String(t.system),
		semconv.MessagingDestinationName(q),
		semconv.MessagingOperationTypeProcess,
		semconv.MessagingOperationName("process"),
		AttrAttempt.Int(d.attempt),
	}
	if d.msgID != "" {
		attrs = append(attrs, semconv.MessagingMessageID(d.msgID))
	}
	if d.urn != "" {
		attrs = append(attrs, AttrURN.String(d.urn))
	}
	if p.TraceID != "" {
		attrs = append(attrs, AttrTraceID.String(p.TraceID))
	}
	opts := []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindConsumer), trace.WithAttributes(attrs...)}
	if sc, ok := t.previousAttempt(msg, d.msgID); ok {
		opts = append(opts, trace.WithLinks(trace.Link{SpanContext: sc, Attributes: []attribute.KeyValue{attribute.String("babelqueue.link", "previous_attempt")}}))
	}
	parent := t.tel.extract(context.Background(), msg.Headers)
	_, d.span = t.tel.tracer.Start(parent, "process "+q, opts...)
	for _, old := range t.tel.reg.open(d) {
		t.end(ctx, old, OutcomeUnsettled)
	}
	return msg, nil
}

// previousAttempt returns the span of the failed attempt before msg: the
// HeaderRetryLink header, else this process's memory of the message id.
func (t *transport) previousAttempt(msg *babelqueue.ReceivedMessage, id string) (trace.SpanContext, bool) {
	if v, ok := msg.Header(HeaderRetryLink); ok {
		if sc, ok := parseLink(v); ok {
			return sc, true
		}
	}
	return t.tel.reg.recalled(id)
}

// classify applies the version gate and the acceptance rule as the App
// does before it decodes a body.
func classify(msg *babelqueue.ReceivedMessage) babelqueue.BodyClass {
	v, present := msg.Header(babelqueue.HeaderSchemaVersion)
	if babelqueue.CheckSchemaVersionHeader(v, present) != nil {
		return babelqueue.ClassUnsupportedVersion
	}
	class, _ := babelqueue.ClassifyBody([]byte(msg.Body))
	return class
}

// Ack settles through inner and ends the delivery's span.
func (t *transport) Ack(ctx context.Context, msg *babelqueue.ReceivedMessage) error {
	err := t.inner.Ack(ctx, msg)
	if err != nil {
		if d := t.tel.reg.lookup(msg); d != nil {
			d.span.AddEvent("babelqueue.ack_failed", trace.WithAttributes(attribute.String("error", err.Error())))
		}
		return err
	}
	if d := t.tel.reg.lookup(msg); d != nil {
		var outcome string
		t.tel.reg.with(func() {
			switch {
			case d.outcome != "":
				outcome = d.outcome
			case d.handlerRan && !d.handlerFailed:
				outcome = OutcomeSuccess
			case !d.handlerRan && d.class == babelqueue.ClassAccepted && !t.tel.middlewareUsed.Load():
				// Without the Middleware a successful handler is not seen.
				outcome = OutcomeSuccess
			default:
				outcome = OutcomeDropped
			}
		})
		t.finish(ctx, d, outcome)
	}
	return nil
}

func (t *transport) rewind(ctx context.Context, msg *babelqueue.ReceivedMessage) error {
	err := t.inner.(babelqueue.Rewinder).Rewind(ctx, msg)
	t.handedBack(ctx, msg, "rewind", err)
	return err
}

func (t *transport) nack(ctx context.Context, msg *babelqueue.ReceivedMessage) error {
	err := t.inner.(babelqueue.NegativeAcknowledger).Nack(ctx, msg)
	t.handedBack(ctx, msg, "nack", err)
	return err
}

// handedBack ends the span of a delivery given back unsettled.
func (t *transport) handedBack(ctx context.Context, msg *babelqueue.ReceivedMessage, how string, err error) {
	d := t.tel.reg.lookup(msg)
	if d == nil {
		return
	}
	if err != nil {
		d.span.AddEvent("babelqueue."+how+"_failed", trace.WithAttributes(attribute.String("error", err.Error())))
		t.finish(ctx, d, OutcomeUnsettled)
		return
	}
	t.tel.reg.with(func() { d.outcome, d.reason = "", "" })
	t.finish(ctx, d, OutcomeRequeued)
}

// finish ends d's span with outcome and records the handled metric, once
// (a delivery already ended, by eviction say, is left alone).
func (t *transport) finish(ctx context.Context, d *delivery, outcome string) {
	if t.tel.reg.close(d) {
		t.end(ctx, d, outcome)
	}
}

// end ends the span of d, removed from the registry, with outcome.
func (t *transport) end(ctx context.Context, d *delivery, outcome string) {
	var reason string
	var failed bool
	t.tel.reg.with(func() { reason, failed = d.reason, d.handlerFailed })
	d.span.SetAttributes(AttrOutcome.String(outcome))
	switch outcome {
	case OutcomeDeadLettered:
		d.span.SetAttributes(AttrReason.String(reason))
		d.span.SetStatus(codes.Error, "dead-lettered: "+reason)
	case OutcomeRetried:
		d.span.SetAttributes(AttrReason.String(reason))
	}
	if outcome == OutcomeRetried || outcome == OutcomeReleased || (outcome == OutcomeRequeued && failed) {
		t.tel.reg.remember(d.msgID, d.span.SpanContext())
	}
	// Counted before the span ends, so that an exported span implies its
	// delivery was counted (as endSend does for the published counter).
	t.tel.metrics.Handled(ctx, d.system, d.queue, outcome)
	d.span.End()
}

// ---- settle writes ----

// retryReason names why d is retried.
func (t *transport) retryReason(d *delivery) string {
	var ran, failed bool
	t.tel.reg.with(func() { ran, failed = d.handlerRan, d.handlerFailed })
	switch {
	case d.class == babelqueue.ClassPoison:
		return babelqueue.ReasonPoison
	case failed:
		return babelqueue.ReasonFailed
	case !ran && t.tel.middlewareUsed.Load():
		return babelqueue.ReasonUnknownURN
	case !ran:
		return "unknown"
	}
	return babelqueue.ReasonFailed
}

// classifyWrite says what a write of body to queue replacing d is.
func (t *transport) classifyWrite(d *delivery, queue, body string, forward bool) (outcome, reason string) {
	if queue != d.queue {
		if dl, ok := babelqueue.DeadLetterOf([]byte(body)); ok {
			return OutcomeDeadLettered, dl.Reason
		}
		if forward || d.class == babelqueue.ClassUnsupportedVersion {
			return OutcomeDeadLettered, ReasonVersionGated
		}
		return OutcomeRedriven, ""
	}
	if body == d.msg.Body {
		return OutcomeReleased, ""
	}
	return OutcomeRetried, t.retryReason(d)
}

// settleWrite runs write, a write replacing delivery d, with headers
// (HeaderRetryLink added to a retry or release copy when headers are
// carried), and records what it was once it succeeded.
func (t *transport) settleWrite(ctx context.Context, d *delivery, queue, body string, headers map[string]string, forward bool, write func(map[string]string) error) error {
	outcome, reason := t.classifyWrite(d, queue, body, forward)
	if headers != nil && (outcome == OutcomeRetried || outcome == OutcomeReleased) {
		headers = maps.Clone(headers)
		headers[HeaderRetryLink] = formatLink(d.span.SpanContext())
	}
	err := write(headers)
	t.recordWrite(ctx, d, queue, outcome, reason, err)
	return err
}

// recordWrite records a replacement write of d.
func (t *transport) recordWrite(ctx context.Context, d *delivery, queue, outcome, reason string, err error) {
	attrs := []attribute.KeyValue{AttrOutcome.String(outcome), semconv.MessagingDestinationName(queue)}
	if reason != "" {
		attrs = append(attrs, AttrReason.String(reason))
	}
	if err != nil {
		attrs = append(attrs, attribute.String("error", err.Error()))
		d.span.AddEvent("babelqueue.settle_write_failed", trace.WithAttributes(attrs...))
		return
	}
	d.span.AddEvent("babelqueue."+outcome, trace.WithAttributes(attrs...))
	t.tel.reg.with(func() { d.outcome, d.reason = outcome, reason })
	switch outcome {
	case OutcomeRetried:
		t.tel.metrics.Retried(ctx, d.system, d.queue, reason)
	case OutcomeDeadLettered:
		t.tel.metrics.DeadLettered(ctx, d.system, d.queue, reason)
	case OutcomeRedriven:
		t.tel.metrics.Redriven(ctx, d.system, queue, 1)
	}
}

func (t *transport) publishFrom(ctx context.Context, queue, body string, from *babelqueue.ReceivedMessage) error {
	kr := t.inner.(babelqueue.KeyedRepublisher)
	d := t.tel.reg.lookup(from)
	if d == nil {
		return kr.PublishFrom(ctx, queue, body, from)
	}
	return t.settleWrite(ctx, d, queue, body, nil, false, func(map[string]string) error {
		return kr.PublishFrom(ctx, queue, body, from)
	})
}

func (t *transport) publishFromWithHeaders(ctx context.Context, queue, body string, from *babelqueue.ReceivedMessage, headers map[string]string) error {
	hr := t.inner.(babelqueue.HeaderRepublisher)
	d := t.tel.reg.lookup(from)
	if d == nil {
		return hr.PublishFromWithHeaders(ctx, queue, body, from, headers)
	}
	if headers == nil {
		headers = map[string]string{}
	}
	return t.settleWrite(ctx, d, queue, body, headers, false, func(h map[string]string) error {
		return hr.PublishFromWithHeaders(ctx, queue, body, from, h)
	})
}

func (t *transport) forward(ctx context.Context, queue, body string, from *babelqueue.ReceivedMessage, headers map[string]string) error {
	fw := t.inner.(babelqueue.Forwarder)
	d := t.tel.reg.lookup(from)
	if d == nil {
		return fw.Forward(ctx, queue, body, from, headers)
	}
	// Forward writes headers exactly: nothing is added.
	return t.settleWrite(ctx, d, queue, body, nil, true, func(map[string]string) error {
		return fw.Forward(ctx, queue, body, from, headers)
	})
}

// withLink returns a shallow copy of msg whose headers carry
// HeaderRetryLink, for the retry capabilities that copy the delivered
// headers (the handle, which bindings settle by, is shared).
func withLink(msg *babelqueue.ReceivedMessage, d *delivery) *babelqueue.ReceivedMessage {
	cp := *msg
	cp.FillHeaders() // headers a binding deferred (babelqueue.DeferredHeaderPopper) are copied too
	headers := cp.Headers
	cp.Headers = make(map[string]string, len(headers)+1)
	maps.Copy(cp.Headers, headers)
	cp.Headers[HeaderRetryLink] = formatLink(d.span.SpanContext())
	return &cp
}

func (t *transport) publishRetryForAttempt(ctx context.Context, from *babelqueue.ReceivedMessage, attemptsBefore int) error {
	tr := t.inner.(babelqueue.TieredRetrier)
	d := t.tel.reg.lookup(from)
	if d == nil {
		return tr.PublishRetryForAttempt(ctx, from, attemptsBefore)
	}
	err := tr.PublishRetryForAttempt(ctx, withLink(from, d), attemptsBefore)
	if errors.Is(err, babelqueue.ErrDelayUnsupported) {
		return err // nothing written; the App takes another path
	}
	t.recordWrite(ctx, d, from.Queue, OutcomeRetried, t.retryReason(d), err)
	return err
}

func (t *transport) retry(ctx context.Context, msg *babelqueue.ReceivedMessage, counted int) error {
	r := t.inner.(babelqueue.Retrier)
	d := t.tel.reg.lookup(msg)
	if d == nil {
		return r.Retry(ctx, msg, counted)
	}
	err := r.Retry(ctx, withLink(msg, d), counted)
	t.recordWrite(ctx, d, msg.Queue, OutcomeRetried, t.retryReason(d), err)
	if err == nil {
		// A Retrier settles the original itself.
		t.finish(ctx, d, OutcomeRetried)
	}
	return err
}
