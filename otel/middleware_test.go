package otel

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"go.opentelemetry.io/otel/codes"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"github.com/babelqueue/babelqueue-go/core/bqtest"

	"github.com/babelqueue/babelqueue-go/otel/internal/oteltest"
)

// TestMiddlewareWithoutHooksMakesItsOwnSpan: a handler wrapped in
// Middleware in an App without the hooks still gets a process span, child
// of the delivered traceparent, and its duration measured once.
func TestMiddlewareWithoutHooksMakesItsOwnSpan(t *testing.T) {
	h := newHarness(t)
	mem := bqtest.NewInMemoryTransport()
	producer := newApp(h, mem)
	if _, err := producer.Publish(context.Background(), testURN, nil); err != nil {
		t.Fatal(err)
	}
	app, err := babelqueue.NewApp(mem, babelqueue.WithDefaultQueue("orders"), babelqueue.WithPollTimeout(20*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	app.Handle(testURN, h.tel.Middleware(func(context.Context, *babelqueue.Envelope) error { return errors.New("no") }))
	if _, err := app.Drain(context.Background()); err != nil {
		t.Fatal(err)
	}
	spans := h.Ended("process orders")
	send := h.Only(t, "send orders")
	if len(spans) != 3 { // the default three attempts
		t.Fatalf("%d process spans, want 3", len(spans))
	}
	for _, s := range spans {
		if s.Parent.SpanID() != send.SpanContext.SpanID() || s.Status.Code != codes.Unset || !hasEvent(s, "exception") {
			t.Errorf("middleware span: parent %v status %v events %v", s.Parent.SpanID(), s.Status, s.Events)
		}
	}
	if n, _ := h.Observations(t, MetricProcessDuration, map[string]string{"error.type": handlerErrType}); n != 3 {
		t.Errorf("handler duration observations = %d, want 3", n)
	}
	if n := h.Count(t, MetricConsumedMessages, nil); n != 0 {
		t.Errorf("consumed = %d without the hooks, want 0 (only the App knows outcomes)", n)
	}
}

// TestMiddlewareWithHooksRecordsPanicOnceOnTheDeliverySpan: with the
// hooks, Middleware adds no span and no second duration; a panic is an
// exception event and is re-raised for the App to settle.
func TestMiddlewareWithHooksRecordsPanicOnceOnTheDeliverySpan(t *testing.T) {
	h := newHarness(t)
	clock := bqtest.NewFakeClock(epoch)
	mem := bqtest.NewInMemoryTransport(bqtest.WithMemoryClock(clock), bqtest.WithMemoryRetryTiers(time.Minute))
	app := newApp(h, mem, babelqueue.WithClock(clock))
	app.Handle(testURN, h.tel.Middleware(func(context.Context, *babelqueue.Envelope) error {
		clock.Advance(time.Second)
		panic("nil map")
	}))
	if _, err := app.Publish(context.Background(), testURN, nil); err != nil {
		t.Fatal(err)
	}
	drain(t, app)
	p := h.Only(t, "process orders")
	oteltest.WantAttrs(t, p, map[string]string{"babelqueue.outcome": "retried", "babelqueue.reason": "failed"})
	exceptions := 0
	for _, e := range p.Events {
		if e.Name == "exception" {
			exceptions++
		}
	}
	if exceptions != 1 {
		t.Errorf("%d exception events, want 1 (events %v)", exceptions, p.Events)
	}
	if n, sum := h.Observations(t, MetricProcessDuration, nil); n != 1 || math.Abs(sum-1) > 1e-9 {
		t.Errorf("handler duration: %d observations summing %v, want 1 of 1s", n, sum)
	}
}
