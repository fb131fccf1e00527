package otel

import (
	"context"
	"testing"
	"time"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"go.opentelemetry.io/otel/trace"
)

var delayEpoch = time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)

// handledAfter checks that app handles nothing before clock has passed
// delay, then drains it and returns the one process span of the delayed
// message.
func handledAfter(t *testing.T, h *harness, app *babelqueue.App, clock *babelqueue.FakeClock, delay time.Duration) processSpan {
	t.Helper()
	app.Handle(testURN, h.tel.Middleware(func(context.Context, *babelqueue.Envelope) error { return nil }))
	clock.Advance(delay - time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if n, err := app.Drain(ctx); err != nil || n != 0 {
		t.Fatalf("before the delay passed: Drain handled %d (%v), want 0", n, err)
	}
	if got := h.ended("process orders"); len(got) != 0 {
		t.Fatalf("%d process spans before the delay passed", len(got))
	}
	clock.Advance(time.Millisecond)
	drain(t, app)
	p := h.only(t, "process orders")
	return processSpan{parent: p.Parent, sc: p.SpanContext}
}

type processSpan struct{ parent, sc trace.SpanContext }

func TestDelayedPublishConsumerSpanIsChildOfProducerSpan(t *testing.T) {
	h := newHarness(t)
	clock := babelqueue.NewFakeClock(delayEpoch)
	mem := babelqueue.NewInMemoryTransport(babelqueue.WithMemoryClock(clock))
	var ops []string
	mem.SetFault(func(op, _ string) error {
		if op != "Pop" && op != "Ack" {
			ops = append(ops, op)
		}
		return nil
	})
	app := newApp(h, mem)
	if _, ok := h.tel.Transport(mem).(babelqueue.DelayedHeaderPublisher); !ok {
		t.Fatal("the decorator of an in-memory transport lacks DelayedHeaderPublisher")
	}

	// A plain delayed publish goes out through the header variant.
	if _, err := app.Publish(context.Background(), testURN, nil, babelqueue.WithDelay(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if len(ops) != 1 || ops[0] != "PublishDelayedWithHeaders" {
		t.Fatalf("writes %v, want [PublishDelayedWithHeaders]", ops)
	}
	msgs := mem.Messages("orders")
	if len(msgs) != 1 || msgs[0].Headers[babelqueue.HeaderTraceparent] == "" {
		t.Fatalf("the delayed message carries no traceparent: %+v", msgs)
	}
	send := h.only(t, "send orders")
	wantAttrs(t, send, map[string]string{"babelqueue.delay_ms": "60000"})

	p := handledAfter(t, h, app, clock, time.Minute)
	if p.parent.SpanID() != send.SpanContext.SpanID() || p.sc.TraceID() != send.SpanContext.TraceID() {
		t.Errorf("process span parent %v in trace %v, want the producer span %v in trace %v",
			p.parent.SpanID(), p.sc.TraceID(), send.SpanContext.SpanID(), send.SpanContext.TraceID())
	}
}

func TestDelayedPublishWithHeadersInjectsAndKeepsCallerHeaders(t *testing.T) {
	h := newHarness(t)
	clock := babelqueue.NewFakeClock(delayEpoch)
	mem := babelqueue.NewInMemoryTransport(babelqueue.WithMemoryClock(clock))
	app := newApp(h, mem)
	ctx, caller := h.tp.Tracer("test").Start(context.Background(), "caller")
	_, err := app.PublishWithHeaders(ctx, testURN, nil, map[string]string{"x-tenant": "acme"}, babelqueue.WithDelay(time.Second))
	caller.End()
	if err != nil {
		t.Fatal(err)
	}
	msgs := mem.Messages("orders")
	if len(msgs) != 1 || msgs[0].Headers["x-tenant"] != "acme" || msgs[0].Headers[babelqueue.HeaderTraceparent] == "" {
		t.Fatalf("delayed message headers %+v: want x-tenant and a traceparent", msgs)
	}
	send := h.only(t, "send orders")
	if send.Parent.SpanID() != caller.SpanContext().SpanID() {
		t.Errorf("send span is not a child of the caller's span")
	}
	p := handledAfter(t, h, app, clock, time.Second)
	if p.parent.SpanID() != send.SpanContext.SpanID() || p.sc.TraceID() != caller.SpanContext().TraceID() {
		t.Errorf("process span parent %v, want the producer span %v", p.parent.SpanID(), send.SpanContext.SpanID())
	}

	// A traceparent the caller passes is left alone.
	const own = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	dh := h.tel.Transport(mem).(babelqueue.DelayedHeaderPublisher)
	if err := dh.PublishDelayedWithHeaders(context.Background(), "own", "{}", time.Second, map[string]string{babelqueue.HeaderTraceparent: own}); err != nil {
		t.Fatal(err)
	}
	if got := mem.Messages("own")[0].Headers[babelqueue.HeaderTraceparent]; got != own {
		t.Errorf("traceparent %q, want the caller's %q", got, own)
	}
}

// delayedOnly is a transport with DelayedPublisher but no header variant.
type delayedOnly struct{ m *babelqueue.InMemoryTransport }

func (d delayedOnly) Publish(ctx context.Context, q, b string) error { return d.m.Publish(ctx, q, b) }
func (d delayedOnly) Pop(ctx context.Context, q string, w time.Duration) (*babelqueue.ReceivedMessage, error) {
	return d.m.Pop(ctx, q, w)
}
func (d delayedOnly) Ack(ctx context.Context, m *babelqueue.ReceivedMessage) error {
	return d.m.Ack(ctx, m)
}
func (d delayedOnly) PublishDelayed(ctx context.Context, q, b string, delay time.Duration) error {
	return d.m.PublishDelayed(ctx, q, b, delay)
}

func TestDelayedPublishOverBareDelayedPublisherHasNoTraceHeaders(t *testing.T) {
	h := newHarness(t)
	clock := babelqueue.NewFakeClock(delayEpoch)
	mem := babelqueue.NewInMemoryTransport(babelqueue.WithMemoryClock(clock))
	wrapped := h.tel.Transport(delayedOnly{mem})
	if _, ok := wrapped.(babelqueue.DelayedHeaderPublisher); ok {
		t.Fatal("the decorator gained DelayedHeaderPublisher")
	}
	if err := wrapped.(babelqueue.DelayedPublisher).PublishDelayed(context.Background(), "orders", "{}", time.Second); err != nil {
		t.Fatal(err)
	}
	h.only(t, "send orders")
	if _, ok := mem.Messages("orders")[0].Headers[babelqueue.HeaderTraceparent]; ok {
		t.Error("a bare DelayedPublisher was given a traceparent it cannot carry")
	}
}
