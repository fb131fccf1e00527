package otel

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

const testURN = "urn:babel:orders:created"

// newApp returns an App over the decorated in-memory transport mem.
func newApp(h *harness, mem babelqueue.Transport, opts ...babelqueue.Option) *babelqueue.App {
	base := []babelqueue.Option{babelqueue.WithDefaultQueue("orders"), babelqueue.WithPollTimeout(20 * time.Millisecond),
		babelqueue.WithFailureBackoff(0), babelqueue.WithLogger(slog.New(slog.DiscardHandler))}
	return babelqueue.NewApp(h.tel.Transport(mem), append(base, opts...)...)
}

func drain(t *testing.T, app *babelqueue.App, queues ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := app.Drain(ctx, queues...); err != nil {
		t.Fatalf("Drain: %v", err)
	}
}

func TestPublishStartsProducerSpanAndInjectsTraceparent(t *testing.T) {
	h := newHarness(t, WithSystem("kafka"))
	mem := babelqueue.NewInMemoryTransport()
	app := newApp(h, mem)

	ctx, parent := h.tp.Tracer("test").Start(context.Background(), "caller")
	id, err := app.Publish(ctx, testURN, map[string]any{"order_id": 1})
	parent.End()
	if err != nil {
		t.Fatal(err)
	}

	send := h.only(t, "send orders")
	if send.SpanKind != trace.SpanKindProducer {
		t.Errorf("kind %v, want producer", send.SpanKind)
	}
	if send.Parent.SpanID() != parent.SpanContext().SpanID() {
		t.Errorf("send span is not a child of the caller's span")
	}
	wantAttrs(t, send, map[string]string{
		"messaging.system":           "kafka",
		"messaging.destination.name": "orders",
		"messaging.operation.type":   "send",
		"messaging.operation.name":   "send",
		"messaging.message.id":       id,
		"babelqueue.urn":             testURN,
	})
	if attrs(send)["babelqueue.trace_id"] == "" {
		t.Error("no babelqueue.trace_id attribute")
	}

	msgs := mem.Messages("orders")
	if len(msgs) != 1 {
		t.Fatalf("%d messages, want 1", len(msgs))
	}
	got := propagation.TraceContext{}.Extract(context.Background(), headerCarrier(msgs[0].Headers))
	sc := trace.SpanContextFromContext(got)
	if sc.SpanID() != send.SpanContext.SpanID() || sc.TraceID() != send.SpanContext.TraceID() {
		t.Errorf("traceparent %q does not name the send span", msgs[0].Headers["traceparent"])
	}
	if n := h.count(t, MetricPublished, map[string]string{"messaging.destination.name": "orders", "messaging.system": "kafka"}); n != 1 {
		t.Errorf("%s = %d, want 1", MetricPublished, n)
	}
}

func TestPublishWithHeadersKeepsCallersTraceparent(t *testing.T) {
	h := newHarness(t)
	mem := babelqueue.NewInMemoryTransport()
	app := newApp(h, mem)
	const tp = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	if _, err := app.PublishWithHeaders(context.Background(), testURN, nil, map[string]string{"traceparent": tp, "x-user": "v"}); err != nil {
		t.Fatal(err)
	}
	msg := mem.Messages("orders")[0]
	if msg.Headers["traceparent"] != tp || msg.Headers["x-user"] != "v" {
		t.Errorf("headers %v: the caller's traceparent and headers must be kept", msg.Headers)
	}
	send := h.only(t, "send orders")
	wantAttrs(t, send, map[string]string{"messaging.system": DefaultSystem})
}

func TestPublishFailureMarksSendSpan(t *testing.T) {
	h := newHarness(t)
	mem := babelqueue.NewInMemoryTransport()
	boom := errors.New("broker down")
	mem.SetFault(func(op, _ string) error {
		if op == "PublishWithHeaders" {
			return boom
		}
		return nil
	})
	app := newApp(h, mem)
	if _, err := app.Publish(context.Background(), testURN, nil); !errors.Is(err, boom) {
		t.Fatalf("Publish: %v, want %v", err, boom)
	}
	send := h.only(t, "send orders")
	if send.Status.Code != codes.Error || !hasEvent(send, "exception") {
		t.Errorf("failed publish: status %v, events %v", send.Status, send.Events)
	}
	if n := h.count(t, MetricPublished, nil); n != 0 {
		t.Errorf("%s = %d after a failed publish, want 0", MetricPublished, n)
	}
}

func TestConsumerSpanIsChildOfProducerSpan(t *testing.T) {
	h := newHarness(t)
	mem := babelqueue.NewInMemoryTransport()
	app := newApp(h, mem)
	var handlerSpan trace.SpanContext
	app.Handle(testURN, h.tel.Middleware(func(ctx context.Context, env *babelqueue.Envelope) error {
		_, s := h.tp.Tracer("test").Start(ctx, "work")
		handlerSpan = s.SpanContext()
		s.End()
		return nil
	}))
	id, err := app.Publish(context.Background(), testURN, nil)
	if err != nil {
		t.Fatal(err)
	}
	drain(t, app)

	send, process, work := h.only(t, "send orders"), h.only(t, "process orders"), h.only(t, "work")
	if process.SpanKind != trace.SpanKindConsumer {
		t.Errorf("process kind %v, want consumer", process.SpanKind)
	}
	if process.Parent.SpanID() != send.SpanContext.SpanID() || process.SpanContext.TraceID() != send.SpanContext.TraceID() {
		t.Errorf("process span is not a child of the send span")
	}
	if work.Parent.SpanID() != process.SpanContext.SpanID() || handlerSpan.TraceID() != send.SpanContext.TraceID() {
		t.Errorf("the handler's span is not a child of the process span")
	}
	if len(process.Links) != 0 {
		t.Errorf("first attempt has links %v", process.Links)
	}
	wantAttrs(t, process, map[string]string{
		"messaging.system":           DefaultSystem,
		"messaging.destination.name": "orders",
		"messaging.operation.type":   "process",
		"messaging.message.id":       id,
		"babelqueue.urn":             testURN,
		"babelqueue.attempt":         "0",
		"babelqueue.outcome":         OutcomeSuccess,
	})
	if process.Status.Code != codes.Unset {
		t.Errorf("status %v, want unset", process.Status)
	}
	if n := h.count(t, MetricHandled, map[string]string{"babelqueue.outcome": OutcomeSuccess}); n != 1 {
		t.Errorf("handled{success} = %d, want 1", n)
	}
	if n, _ := h.observations(t, MetricHandlerDuration, map[string]string{"babelqueue.urn": testURN, "babelqueue.handler.outcome": "success"}); n != 1 {
		t.Errorf("handler duration observations = %d, want 1", n)
	}
}

// failOnce returns a handler that fails its first call.
func failOnce(calls *atomic.Int32) babelqueue.Handler {
	return func(ctx context.Context, env *babelqueue.Envelope) error {
		if calls.Add(1) == 1 {
			return errors.New("projection store unavailable")
		}
		return nil
	}
}

// checkRetryTrace checks the spans of a message that failed once and then
// succeeded.
func checkRetryTrace(t *testing.T, h *harness) {
	t.Helper()
	send := h.only(t, "send orders")
	process := h.ended("process orders")
	if len(process) != 2 {
		t.Fatalf("%d process spans, want 2 (all: %v)", len(process), spanNames(h.spans.GetSpans()))
	}
	first, second := process[0], process[1]
	for _, p := range process {
		if p.SpanContext.TraceID() != send.SpanContext.TraceID() || p.Parent.SpanID() != send.SpanContext.SpanID() {
			t.Errorf("attempt %s is not a child of the send span", attrs(p)["babelqueue.attempt"])
		}
		if p.Status.Code != codes.Unset {
			t.Errorf("attempt %s status %v, want unset (not dead-lettered)", attrs(p)["babelqueue.attempt"], p.Status)
		}
	}
	wantAttrs(t, first, map[string]string{"babelqueue.attempt": "0", "babelqueue.outcome": OutcomeRetried, "babelqueue.reason": "failed"})
	if !hasEvent(first, "exception") || !hasEvent(first, "babelqueue.retried") {
		t.Errorf("failed attempt events %v, want exception and babelqueue.retried", first.Events)
	}
	wantAttrs(t, second, map[string]string{"babelqueue.attempt": "1", "babelqueue.outcome": OutcomeSuccess})
	if !linkedTo(second, first.SpanContext) {
		t.Errorf("retry span links %v, want a link to the failed attempt %v", second.Links, first.SpanContext.SpanID())
	}
	if n := h.count(t, MetricRetried, map[string]string{"babelqueue.reason": "failed", "messaging.destination.name": "orders"}); n != 1 {
		t.Errorf("retried{failed} = %d, want 1", n)
	}
	for outcome, want := range map[string]int64{OutcomeRetried: 1, OutcomeSuccess: 1, OutcomeDeadLettered: 0} {
		if n := h.count(t, MetricHandled, map[string]string{"babelqueue.outcome": outcome}); n != want {
			t.Errorf("handled{%s} = %d, want %d", outcome, n, want)
		}
	}
	if n, _ := h.observations(t, MetricHandlerDuration, map[string]string{"babelqueue.handler.outcome": "error"}); n != 1 {
		t.Errorf("handler duration errors = %d, want 1", n)
	}
}

func TestRetryThroughRetrierLinksFailedAttempt(t *testing.T) {
	h := newHarness(t)
	mem := babelqueue.NewInMemoryTransport() // no tiers: the App uses Retry
	app := newApp(h, mem)
	var calls atomic.Int32
	app.Handle(testURN, h.tel.Middleware(failOnce(&calls)))
	if _, err := app.Publish(context.Background(), testURN, nil); err != nil {
		t.Fatal(err)
	}
	drain(t, app)
	checkRetryTrace(t, h)
}

func TestRetryThroughTierLinksFailedAttempt(t *testing.T) {
	h := newHarness(t)
	mem := babelqueue.NewInMemoryTransport(babelqueue.WithMemoryRetryTiers(time.Millisecond))
	app := newApp(h, mem)
	var calls atomic.Int32
	app.Handle(testURN, h.tel.Middleware(failOnce(&calls)))
	if _, err := app.Publish(context.Background(), testURN, nil); err != nil {
		t.Fatal(err)
	}
	drain(t, app)
	checkRetryTrace(t, h)
	if mem.Acked("orders") != 2 {
		t.Errorf("acked %d, want 2", mem.Acked("orders"))
	}
}

// republisher exposes only the capabilities of a binding without
// Retrier or TieredRetrier, so that the App retries by republishing with
// headers.
type republisher struct{ m *babelqueue.InMemoryTransport }

func (r republisher) Publish(ctx context.Context, q, b string) error { return r.m.Publish(ctx, q, b) }
func (r republisher) Pop(ctx context.Context, q string, d time.Duration) (*babelqueue.ReceivedMessage, error) {
	return r.m.Pop(ctx, q, d)
}
func (r republisher) Ack(ctx context.Context, m *babelqueue.ReceivedMessage) error {
	return r.m.Ack(ctx, m)
}
func (r republisher) PublishWithHeaders(ctx context.Context, q, b string, h map[string]string) error {
	return r.m.PublishWithHeaders(ctx, q, b, h)
}
func (r republisher) PublishFromWithHeaders(ctx context.Context, q, b string, from *babelqueue.ReceivedMessage, h map[string]string) error {
	return r.m.PublishFromWithHeaders(ctx, q, b, from, h)
}
func (r republisher) Rewind(ctx context.Context, m *babelqueue.ReceivedMessage) error {
	return r.m.Rewind(ctx, m)
}

func TestRetryLinkCrossesProcessesInHeader(t *testing.T) {
	// Two Telemetry values stand for two processes sharing one exporter:
	// the first fails the message, the second handles the retry and knows
	// the failed attempt only from the retry copy's headers.
	h := newHarness(t)
	second, err := New(WithTracerProvider(h.tp), WithMeterProvider(noop.NewMeterProvider()))
	if err != nil {
		t.Fatal(err)
	}
	mem := babelqueue.NewInMemoryTransport()
	errStop := errors.New("first process stops")
	var stop atomic.Bool
	mem.SetFault(func(op, _ string) error {
		if op == "Pop" && stop.Load() {
			return errStop
		}
		return nil
	})
	appA := newApp(h, republisher{mem})
	appA.Handle(testURN, h.tel.Middleware(func(context.Context, *babelqueue.Envelope) error {
		stop.Store(true) // the loop stops at its next read, after settling
		return errors.New("fail")
	}))
	if _, err := appA.Publish(context.Background(), testURN, nil); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := appA.Consume(ctx); !errors.Is(err, errStop) {
		t.Fatalf("first process: Consume returned %v", err)
	}
	mem.SetFault(nil)

	send, failed := h.only(t, "send orders"), h.only(t, "process orders")
	retryCopy := mem.Messages("orders")
	if len(retryCopy) != 1 || retryCopy[0].Headers[HeaderRetryLink] != formatLink(failed.SpanContext) {
		t.Fatalf("retry copy %v: want a %s header naming the failed attempt", retryCopy, HeaderRetryLink)
	}
	if got := retryCopy[0].Headers["traceparent"]; got != formatLink(send.SpanContext) {
		t.Errorf("retry copy traceparent %q, want the original %q", got, formatLink(send.SpanContext))
	}

	appB := babelqueue.NewApp(second.Transport(republisher{mem}), babelqueue.WithDefaultQueue("orders"),
		babelqueue.WithPollTimeout(20*time.Millisecond), babelqueue.WithLogger(slog.New(slog.DiscardHandler)))
	appB.Handle(testURN, second.Middleware(func(context.Context, *babelqueue.Envelope) error { return nil }))
	drain(t, appB)
	spans := h.ended("process orders")
	if len(spans) != 2 {
		t.Fatalf("%d process spans, want 2", len(spans))
	}
	if !linkedTo(spans[1], failed.SpanContext) {
		t.Errorf("retry in another process does not link to the failed attempt: links %v", spans[1].Links)
	}
	if spans[1].Parent.SpanID() != send.SpanContext.SpanID() {
		t.Errorf("retry span parent %v, want the producer span %v", spans[1].Parent.SpanID(), send.SpanContext.SpanID())
	}
	wantAttrs(t, spans[1], map[string]string{"babelqueue.attempt": "1", "babelqueue.outcome": OutcomeSuccess})
}
