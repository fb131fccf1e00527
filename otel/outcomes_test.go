package otel

import (
	"context"
	"errors"
	"testing"
	"time"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

func TestDeadLetterIsTheOnlyErrorStatus(t *testing.T) {
	h := newHarness(t)
	mem := babelqueue.NewInMemoryTransport()
	app := newApp(h, mem, babelqueue.WithMaxAttempts(2))
	app.Handle(testURN, h.tel.Middleware(func(context.Context, *babelqueue.Envelope) error { return errors.New("invalid transition") }))
	if _, err := app.Publish(context.Background(), testURN, nil); err != nil {
		t.Fatal(err)
	}
	drain(t, app)

	spans := h.ended("process orders")
	if len(spans) != 2 {
		t.Fatalf("%d process spans, want 2", len(spans))
	}
	if spans[0].Status.Code != codes.Unset {
		t.Errorf("retried attempt status %v, want unset", spans[0].Status)
	}
	last := spans[1]
	if last.Status.Code != codes.Error {
		t.Errorf("dead-lettered attempt status %v, want error", last.Status)
	}
	wantAttrs(t, last, map[string]string{"babelqueue.outcome": OutcomeDeadLettered, "babelqueue.reason": "failed", "babelqueue.attempt": "1"})
	if !linkedTo(last, spans[0].SpanContext) || !hasEvent(last, "babelqueue.dead_lettered") {
		t.Errorf("dead-lettered attempt: links %v events %v", last.Links, last.Events)
	}
	if n := h.count(t, MetricDeadLettered, map[string]string{"babelqueue.reason": "failed", "messaging.destination.name": "orders"}); n != 1 {
		t.Errorf("dead_lettered{failed} = %d, want 1", n)
	}
	if n := h.count(t, MetricHandled, map[string]string{"babelqueue.outcome": OutcomeDeadLettered}); n != 1 {
		t.Errorf("handled{dead_lettered} = %d, want 1", n)
	}
	// The dead letter keeps the original trace.
	dl := mem.Messages("orders.dlq")
	if len(dl) != 1 || dl[0].Headers["traceparent"] != formatLink(h.only(t, "send orders").SpanContext) {
		t.Errorf("dead letter headers %v: want the original traceparent", dl)
	}
}

func TestPoisonDeadLettered(t *testing.T) {
	h := newHarness(t)
	mem := babelqueue.NewInMemoryTransport()
	app := newApp(h, mem)
	app.Handle(testURN, h.tel.Middleware(func(context.Context, *babelqueue.Envelope) error { return nil }))
	if err := mem.Publish(context.Background(), "orders", "not json"); err != nil {
		t.Fatal(err)
	}
	drain(t, app)
	p := h.only(t, "process orders")
	if p.Status.Code != codes.Error {
		t.Errorf("poison status %v, want error", p.Status)
	}
	wantAttrs(t, p, map[string]string{"babelqueue.outcome": OutcomeDeadLettered, "babelqueue.reason": "poison"})
	if n := h.count(t, MetricPoison, map[string]string{"messaging.destination.name": "orders"}); n != 1 {
		t.Errorf("poison = %d, want 1", n)
	}
	if n := h.count(t, MetricDeadLettered, map[string]string{"babelqueue.reason": "poison"}); n != 1 {
		t.Errorf("dead_lettered{poison} = %d, want 1", n)
	}
}

func TestPoisonRetriedWithDeadLetteringOff(t *testing.T) {
	h := newHarness(t)
	mem := babelqueue.NewInMemoryTransport()
	app := newApp(h, mem, babelqueue.WithDeadLetter(false), babelqueue.WithMaxAttempts(2))
	if err := mem.Publish(context.Background(), "orders", "[1]"); err != nil {
		t.Fatal(err)
	}
	drain(t, app)
	if n := h.count(t, MetricRetried, map[string]string{"babelqueue.reason": "poison"}); n != 1 {
		t.Errorf("retried{poison} = %d, want 1", n)
	}
	if n := h.count(t, MetricHandled, map[string]string{"babelqueue.outcome": OutcomeDropped}); n != 1 {
		t.Errorf("handled{dropped} = %d, want 1", n)
	}
	for _, s := range h.ended("process orders") {
		if s.Status.Code == codes.Error {
			t.Errorf("a dropped (not dead-lettered) message has an error span")
		}
	}
	if n := h.count(t, MetricPoison, nil); n != 2 {
		t.Errorf("poison = %d, want 2 (one per delivery)", n)
	}
}

func TestVersionGatedDeadLettered(t *testing.T) {
	h := newHarness(t)
	mem := babelqueue.NewInMemoryTransport()
	app := newApp(h, mem)
	app.Handle(testURN, h.tel.Middleware(func(context.Context, *babelqueue.Envelope) error { return nil }))
	body := `{"job":"` + testURN + `","trace_id":"t1","data":{},"meta":{"id":"m1","queue":"orders","lang":"php","schema_version":2,"created_at":1},"attempts":0}`
	if err := mem.Publish(context.Background(), "orders", body); err != nil {
		t.Fatal(err)
	}
	drain(t, app)
	p := h.only(t, "process orders")
	wantAttrs(t, p, map[string]string{"babelqueue.outcome": OutcomeDeadLettered, "babelqueue.reason": ReasonVersionGated})
	if p.Status.Code != codes.Error {
		t.Errorf("status %v, want error", p.Status)
	}
	if n := h.count(t, MetricVersionGated, nil); n != 1 {
		t.Errorf("version_gated = %d, want 1", n)
	}
	if n := h.count(t, MetricDeadLettered, map[string]string{"babelqueue.reason": ReasonVersionGated}); n != 1 {
		t.Errorf("dead_lettered{version_gated} = %d, want 1", n)
	}
	if mem.Len("orders.dlq") != 1 {
		t.Errorf("dlq holds %d, want 1", mem.Len("orders.dlq"))
	}
}

func TestUnknownURNReasons(t *testing.T) {
	h := newHarness(t)
	mem := babelqueue.NewInMemoryTransport()
	app := newApp(h, mem, babelqueue.WithMaxAttempts(2))
	app.Handle("urn:babel:other", h.tel.Middleware(func(context.Context, *babelqueue.Envelope) error { return nil }))
	if _, err := app.Publish(context.Background(), testURN, nil); err != nil {
		t.Fatal(err)
	}
	drain(t, app)
	if n := h.count(t, MetricRetried, map[string]string{"babelqueue.reason": "unknown_urn"}); n != 1 {
		t.Errorf("retried{unknown_urn} = %d, want 1", n)
	}
	if n := h.count(t, MetricDeadLettered, map[string]string{"babelqueue.reason": "unknown_urn"}); n != 1 {
		t.Errorf("dead_lettered{unknown_urn} = %d, want 1", n)
	}
}

func TestUnknownURNDeleteAndRelease(t *testing.T) {
	for _, tc := range []struct {
		strategy babelqueue.UnknownURNStrategy
		outcome  string
	}{{babelqueue.StrategyDelete, OutcomeDropped}, {babelqueue.StrategyRelease, OutcomeReleased}} {
		t.Run(string(tc.strategy), func(t *testing.T) {
			h := newHarness(t)
			mem := babelqueue.NewInMemoryTransport()
			app := newApp(h, mem, babelqueue.WithUnknownURNStrategy(tc.strategy))
			app.Handle("urn:babel:other", h.tel.Middleware(func(context.Context, *babelqueue.Envelope) error { return nil }))
			if _, err := app.Publish(context.Background(), testURN, nil); err != nil {
				t.Fatal(err)
			}
			drain(t, app)
			if n := h.count(t, MetricHandled, map[string]string{"babelqueue.outcome": tc.outcome}); n < 1 {
				t.Errorf("handled{%s} = %d, want at least 1", tc.outcome, n)
			}
			for _, s := range h.ended("process orders") {
				if s.Status.Code == codes.Error {
					t.Errorf("%s: error status on a message that was not dead-lettered", tc.strategy)
				}
			}
		})
	}
}

func TestRedriveThroughDecorator(t *testing.T) {
	h := newHarness(t)
	mem := babelqueue.NewInMemoryTransport()
	app := newApp(h, mem, babelqueue.WithMaxAttempts(1))
	app.Handle(testURN, h.tel.Middleware(func(context.Context, *babelqueue.Envelope) error { return errors.New("no") }))
	for range 2 {
		if _, err := app.Publish(context.Background(), testURN, nil); err != nil {
			t.Fatal(err)
		}
	}
	drain(t, app)
	res, err := babelqueue.Redrive(context.Background(), h.tel.Transport(mem), "orders.dlq", babelqueue.WithRedrivePollTimeout(20*time.Millisecond))
	if err != nil || res.Moved != 2 {
		t.Fatalf("Redrive: %+v %v", res, err)
	}
	if n := h.count(t, MetricRedriven, map[string]string{"messaging.destination.name": "orders"}); n != 2 {
		t.Errorf("redriven{orders} = %d, want 2", n)
	}
	if n := h.count(t, MetricHandled, map[string]string{"babelqueue.outcome": OutcomeRedriven, "messaging.destination.name": "orders.dlq"}); n != 2 {
		t.Errorf("handled{redriven} on the dlq = %d, want 2", n)
	}
	for _, s := range h.ended("process orders.dlq") {
		if s.Status.Code == codes.Error {
			t.Errorf("redriven dead letter has an error status")
		}
	}
}

func TestMiddlewareAloneStartsChildOfHeaders(t *testing.T) {
	h := newHarness(t, WithSystem("pulsar"))
	_, producer := h.tp.Tracer("test").Start(context.Background(), "producer")
	producer.End()
	headers := h.tel.inject(trace.ContextWithSpan(context.Background(), producer), nil)
	ctx := babelqueue.ContextWithHeaders(context.Background(), headers)
	env, err := babelqueue.Make(testURN, nil, babelqueue.WithQueue("orders"))
	if err != nil {
		t.Fatal(err)
	}
	var inHandler trace.SpanContext
	handler := h.tel.Middleware(func(ctx context.Context, _ *babelqueue.Envelope) error {
		inHandler = trace.SpanContextFromContext(ctx)
		return errors.New("boom")
	})
	if err := handler(ctx, env); err == nil || err.Error() != "boom" {
		t.Fatalf("handler error %v, want boom unchanged", err)
	}
	p := h.only(t, "process orders")
	if p.Parent.SpanID() != producer.SpanContext().SpanID() || p.SpanContext.TraceID() != producer.SpanContext().TraceID() {
		t.Errorf("middleware span is not a child of the header's span")
	}
	if inHandler.SpanID() != p.SpanContext.SpanID() {
		t.Errorf("the handler's context does not carry the process span")
	}
	if p.Status.Code != codes.Unset || !hasEvent(p, "exception") {
		t.Errorf("status %v events %v: want an exception event and no error status", p.Status, p.Events)
	}
	wantAttrs(t, p, map[string]string{"messaging.system": "pulsar", "messaging.message.id": env.Meta.ID, "babelqueue.attempt": "0"})
	if n, _ := h.observations(t, MetricHandlerDuration, map[string]string{"babelqueue.handler.outcome": "error", "messaging.system": "pulsar"}); n != 1 {
		t.Errorf("handler duration errors = %d, want 1", n)
	}
}

func TestMiddlewareRecordsPanicAndRepanics(t *testing.T) {
	h := newHarness(t)
	mem := babelqueue.NewInMemoryTransport()
	app := newApp(h, mem, babelqueue.WithMaxAttempts(1))
	app.Handle(testURN, h.tel.Middleware(func(context.Context, *babelqueue.Envelope) error { panic("kaboom") }))
	if _, err := app.Publish(context.Background(), testURN, nil); err != nil {
		t.Fatal(err)
	}
	drain(t, app)
	p := h.only(t, "process orders")
	if !hasEvent(p, "exception") {
		t.Errorf("no exception event for a panic")
	}
	// The App recovered the re-raised panic as a failure: dead-lettered.
	wantAttrs(t, p, map[string]string{"babelqueue.outcome": OutcomeDeadLettered, "babelqueue.reason": "failed"})
	if mem.Len("orders.dlq") != 1 {
		t.Errorf("dlq holds %d, want 1", mem.Len("orders.dlq"))
	}
}

func TestPublishDelayedSpan(t *testing.T) {
	h := newHarness(t)
	mem := babelqueue.NewInMemoryTransport()
	app := newApp(h, mem)
	if _, err := app.Publish(context.Background(), testURN, nil, babelqueue.WithDelay(time.Hour)); err != nil {
		t.Fatal(err)
	}
	s := h.only(t, "send orders")
	wantAttrs(t, s, map[string]string{"babelqueue.delay_ms": "3600000", "messaging.operation.type": "send"})
	if n := h.count(t, MetricPublished, nil); n != 1 {
		t.Errorf("published = %d, want 1", n)
	}
}

func TestSettleWriteFailureRequeues(t *testing.T) {
	h := newHarness(t)
	mem := babelqueue.NewInMemoryTransport()
	fail := true
	mem.SetFault(func(op, _ string) error {
		if op == "Retry" && fail {
			fail = false
			return errors.New("retry refused")
		}
		return nil
	})
	app := newApp(h, mem)
	var calls int
	app.Handle(testURN, h.tel.Middleware(func(context.Context, *babelqueue.Envelope) error {
		calls++
		if calls == 1 {
			return errors.New("fail")
		}
		return nil
	}))
	if _, err := app.Publish(context.Background(), testURN, nil); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := app.Drain(ctx); !errors.Is(err, babelqueue.ErrSettle) {
		t.Fatalf("Drain: %v, want ErrSettle", err)
	}
	drain(t, app)
	spans := h.ended("process orders")
	if len(spans) != 2 {
		t.Fatalf("%d spans, want 2", len(spans))
	}
	wantAttrs(t, spans[0], map[string]string{"babelqueue.outcome": OutcomeRequeued})
	if !hasEvent(spans[0], "babelqueue.settle_write_failed") {
		t.Errorf("events %v: want babelqueue.settle_write_failed", spans[0].Events)
	}
	if !linkedTo(spans[1], spans[0].SpanContext) {
		t.Errorf("redelivery after a failed attempt does not link to it")
	}
	if n := h.count(t, MetricRetried, nil); n != 0 {
		t.Errorf("retried = %d after a refused retry write, want 0", n)
	}
}

func TestOpenDeliveriesAreBounded(t *testing.T) {
	h := newHarness(t, WithMaxOpenDeliveries(1))
	mem := babelqueue.NewInMemoryTransport()
	tr := h.tel.Transport(mem)
	ctx := context.Background()
	for range 2 {
		if err := mem.Publish(ctx, "q", `{"job":"urn:x","trace_id":"t","data":{},"meta":{"id":"`+babelqueue.NewID()+`","queue":"q","lang":"go","schema_version":1,"created_at":1},"attempts":0}`); err != nil {
			t.Fatal(err)
		}
	}
	a, _ := tr.Pop(ctx, "q", time.Second)
	b, _ := tr.Pop(ctx, "q", time.Second)
	if a == nil || b == nil {
		t.Fatal("Pop returned nothing")
	}
	first := h.only(t, "process q")
	wantAttrs(t, first, map[string]string{"babelqueue.outcome": OutcomeUnsettled})
	if err := tr.Ack(ctx, b); err != nil {
		t.Fatal(err)
	}
	if len(h.ended("process q")) != 2 {
		t.Errorf("second delivery not ended by its Ack")
	}
	// Acknowledging the evicted one settles it without a second span end.
	if err := tr.Ack(ctx, a); err != nil {
		t.Fatal(err)
	}
	if len(h.ended("process q")) != 2 {
		t.Errorf("an evicted delivery was ended twice")
	}
}

// plain exposes only the three methods of the Transport contract.
type plain struct{ m *babelqueue.InMemoryTransport }

func (p plain) Publish(ctx context.Context, q, b string) error { return p.m.Publish(ctx, q, b) }
func (p plain) Pop(ctx context.Context, q string, d time.Duration) (*babelqueue.ReceivedMessage, error) {
	return p.m.Pop(ctx, q, d)
}
func (p plain) Ack(ctx context.Context, m *babelqueue.ReceivedMessage) error { return p.m.Ack(ctx, m) }

func TestPlainTransportRetryIsASettleWriteNotAPublish(t *testing.T) {
	// Without any capability the App retries by Publish: the decorator must
	// recognise the retry copy (same meta.id as the open delivery, same
	// queue) and not count or trace it as a new message.
	h := newHarness(t)
	mem := babelqueue.NewInMemoryTransport()
	app := newApp(h, plain{mem})
	calls := 0
	app.Handle(testURN, h.tel.Middleware(func(context.Context, *babelqueue.Envelope) error {
		if calls++; calls == 1 {
			return errors.New("fail")
		}
		return nil
	}))
	if _, err := app.Publish(context.Background(), testURN, nil); err != nil {
		t.Fatal(err)
	}
	drain(t, app)
	if n := len(h.ended("send orders")); n != 1 {
		t.Errorf("%d send spans, want 1 (the retry copy is no new publish)", n)
	}
	if n := h.count(t, MetricPublished, nil); n != 1 {
		t.Errorf("published = %d, want 1", n)
	}
	if n := h.count(t, MetricRetried, map[string]string{"babelqueue.reason": "failed"}); n != 1 {
		t.Errorf("retried = %d, want 1", n)
	}
	spans := h.ended("process orders")
	if len(spans) != 2 {
		t.Fatalf("%d process spans, want 2", len(spans))
	}
	// Plain Publish carries no headers: the trace context is lost on the
	// wire, and the link comes from the decorator's memory.
	if spans[0].Parent.IsValid() {
		t.Errorf("first delivery has a parent although Publish cannot carry headers")
	}
	if !linkedTo(spans[1], spans[0].SpanContext) {
		t.Errorf("retry does not link to the failed attempt")
	}
}
