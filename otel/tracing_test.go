package otel

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"github.com/babelqueue/babelqueue-go/core/bqtest"
	"github.com/babelqueue/babelqueue-go/core/driver"

	"github.com/babelqueue/babelqueue-go/otel/internal/oteltest"
)

const testURN = "urn:babel:orders:created"

var epoch = time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)

// newApp returns an App over mem reporting to the harness's hooks.
func newApp(h *harness, mem babelqueue.Transport, opts ...babelqueue.Option) *babelqueue.App {
	return newAppOf(h.tel, mem, opts...)
}

func newAppOf(tel *Telemetry, mem babelqueue.Transport, opts ...babelqueue.Option) *babelqueue.App {
	base := []babelqueue.Option{babelqueue.WithDefaultQueue("orders"), babelqueue.WithPollTimeout(20 * time.Millisecond),
		babelqueue.WithFailureBackoff(0), babelqueue.WithLogger(slog.New(slog.DiscardHandler)), babelqueue.WithHooks(tel.Hooks())}
	app, err := babelqueue.NewApp(mem, append(base, opts...)...)
	if err != nil {
		panic(err) // a test's own options are valid
	}
	return app
}

func drain(t *testing.T, app *babelqueue.App, queues ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := app.Drain(ctx, queues...); err != nil {
		t.Fatalf("Drain: %v", err)
	}
}

func ok(context.Context, *babelqueue.Envelope) error { return nil }

// failOnce returns a handler that fails its first call.
func failOnce(calls *atomic.Int32) babelqueue.Handler {
	return func(ctx context.Context, env *babelqueue.Envelope) error {
		if calls.Add(1) == 1 {
			return errors.New("projection store unavailable")
		}
		return nil
	}
}

func TestPublishStartsProducerSpanAndInjectsTraceparent(t *testing.T) {
	h := newHarness(t, WithSystem("kafka"))
	mem := bqtest.NewInMemoryTransport()
	app := newApp(h, mem)

	ctx, parent := h.TP.Tracer("test").Start(context.Background(), "caller")
	id, err := app.Publish(ctx, testURN, map[string]any{"order_id": 1})
	parent.End()
	if err != nil {
		t.Fatal(err)
	}
	send := h.Only(t, "send orders")
	if send.SpanKind != trace.SpanKindProducer || send.Parent.SpanID() != parent.SpanContext().SpanID() {
		t.Errorf("send span kind %v parent %v, want a producer child of the caller's span", send.SpanKind, send.Parent.SpanID())
	}
	oteltest.WantAttrs(t, send, map[string]string{
		"messaging.system":           "kafka",
		"messaging.destination.name": "orders",
		"messaging.operation.type":   "send",
		"messaging.operation.name":   "send",
		"messaging.message.id":       id,
		"babelqueue.urn":             testURN,
	})
	if oteltest.Attrs(send)["babelqueue.trace_id"] == "" {
		t.Error("no babelqueue.trace_id attribute")
	}
	msgs := mem.Messages("orders")
	if len(msgs) != 1 {
		t.Fatalf("%d messages, want 1", len(msgs))
	}
	sc := trace.SpanContextFromContext(propagation.TraceContext{}.Extract(context.Background(), headerCarrier(msgs[0].Headers)))
	if sc.SpanID() != send.SpanContext.SpanID() || sc.TraceID() != send.SpanContext.TraceID() {
		t.Errorf("traceparent %q does not name the send span", msgs[0].Headers["traceparent"])
	}
	if n := h.Count(t, MetricSentMessages, map[string]string{"messaging.destination.name": "orders", "messaging.system": "kafka"}); n != 1 {
		t.Errorf("%s = %d, want 1", MetricSentMessages, n)
	}
}

func TestPublishKeepsCallersTraceparentAndHeaders(t *testing.T) {
	h := newHarness(t)
	mem := bqtest.NewInMemoryTransport()
	app := newApp(h, mem)
	const tp = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	headers := map[string]string{"traceparent": tp, "x-user": "v"}
	if _, err := app.PublishWithHeaders(context.Background(), testURN, nil, headers); err != nil {
		t.Fatal(err)
	}
	msg := mem.Messages("orders")[0]
	if msg.Headers["traceparent"] != tp || msg.Headers["x-user"] != "v" {
		t.Errorf("headers %v: the caller's traceparent and headers must be kept", msg.Headers)
	}
	if len(headers) != 2 {
		t.Errorf("the caller's header map was changed: %v", headers)
	}
	oteltest.WantAttrs(t, h.Only(t, "send orders"), map[string]string{"messaging.system": DefaultSystem})
}

// TestPublishFailureMarksSendSpanAndCountsItWithErrorType: a publish the
// broker refused is an attempted send, counted with error.type, and its
// span has status Error.
func TestPublishFailureMarksSendSpanAndCountsItWithErrorType(t *testing.T) {
	h := newHarness(t)
	mem := bqtest.NewInMemoryTransport()
	boom := errors.New("broker down")
	mem.SetFault(func(op, _ string) error {
		if op == "publish" {
			return boom
		}
		return nil
	})
	app := newApp(h, mem)
	if _, err := app.Publish(context.Background(), testURN, nil); !errors.Is(err, boom) {
		t.Fatalf("Publish: %v, want %v", err, boom)
	}
	send := h.Only(t, "send orders")
	if send.Status.Code != codes.Error || !hasEvent(send, "exception") {
		t.Errorf("failed publish: status %v, events %v", send.Status, send.Events)
	}
	oteltest.WantAttrs(t, send, map[string]string{"error.type": handlerErrType})
	if n := h.Count(t, MetricSentMessages, map[string]string{"error.type": handlerErrType, "messaging.operation.name": "send"}); n != 1 {
		t.Errorf("%s{error.type} = %d after a failed publish, want 1", MetricSentMessages, n)
	}
	if n, _ := h.Observations(t, MetricOperationDuration, map[string]string{"error.type": handlerErrType, "messaging.operation.type": "send"}); n != 1 {
		t.Errorf("%s{error.type} = %d observations after a failed publish, want 1", MetricOperationDuration, n)
	}
}

func TestDelayedPublishCarriesTraceAndDelay(t *testing.T) {
	h := newHarness(t)
	clock := bqtest.NewFakeClock(epoch)
	mem := bqtest.NewInMemoryTransport(bqtest.WithMemoryClock(clock))
	app := newApp(h, mem, babelqueue.WithClock(clock))
	app.Handle(testURN, ok)
	if _, err := app.Publish(context.Background(), testURN, nil, babelqueue.WithDelay(time.Minute)); err != nil {
		t.Fatal(err)
	}
	send := h.Only(t, "send orders")
	oteltest.WantAttrs(t, send, map[string]string{"babelqueue.delay_ms": "60000"})
	if msgs := mem.Messages("orders"); len(msgs) != 1 || msgs[0].Headers["traceparent"] != formatLink(send.SpanContext) {
		t.Fatalf("the delayed message does not carry the send span's traceparent: %+v", msgs)
	}
	drain(t, app)
	if n := len(h.Ended("process orders")); n != 0 {
		t.Fatalf("%d process spans before the delay passed", n)
	}
	clock.Advance(time.Minute)
	drain(t, app)
	p := h.Only(t, "process orders")
	if p.Parent.SpanID() != send.SpanContext.SpanID() || p.SpanContext.TraceID() != send.SpanContext.TraceID() {
		t.Errorf("process span parent %v, want the producer span %v", p.Parent.SpanID(), send.SpanContext.SpanID())
	}
}

func TestProcessSpanIsChildOfProducerAndParentOfHandlerSpans(t *testing.T) {
	h := newHarness(t)
	mem := bqtest.NewInMemoryTransport()
	app := newApp(h, mem)
	app.Handle(testURN, func(ctx context.Context, env *babelqueue.Envelope) error {
		_, s := h.TP.Tracer("test").Start(ctx, "work")
		s.End()
		return nil
	})
	id, err := app.Publish(context.Background(), testURN, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The consumer's own span is not the parent of its deliveries.
	ctx, consumer := h.TP.Tracer("test").Start(context.Background(), "consumer")
	if _, err := app.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	consumer.End()

	send, process, work := h.Only(t, "send orders"), h.Only(t, "process orders"), h.Only(t, "work")
	if process.SpanKind != trace.SpanKindConsumer {
		t.Errorf("process kind %v, want consumer", process.SpanKind)
	}
	if process.Parent.SpanID() != send.SpanContext.SpanID() || process.SpanContext.TraceID() != send.SpanContext.TraceID() {
		t.Errorf("process span is not a child of the send span")
	}
	if work.Parent.SpanID() != process.SpanContext.SpanID() {
		t.Errorf("the handler's span is not a child of the process span")
	}
	if len(process.Links) != 0 {
		t.Errorf("first attempt has links %v", process.Links)
	}
	oteltest.WantAttrs(t, process, map[string]string{
		"messaging.system":           DefaultSystem,
		"messaging.destination.name": "orders",
		"messaging.operation.type":   "process",
		"messaging.operation.name":   "process",
		"messaging.message.id":       id,
		"babelqueue.urn":             testURN,
		"babelqueue.attempt":         "0",
		"babelqueue.outcome":         "handled",
	})
}

func TestMessageWithoutTraceContextStartsATraceItsRetryContinues(t *testing.T) {
	h := newHarness(t)
	mem := bqtest.NewInMemoryTransport()
	app := newApp(h, mem)
	var calls atomic.Int32
	app.Handle(testURN, failOnce(&calls))
	env, err := babelqueue.Make(testURN, nil, babelqueue.WithQueue("orders"))
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := env.Encode()
	if err := mem.Publish(context.Background(), "orders", string(raw)); err != nil {
		t.Fatal(err)
	}
	ctx, consumer := h.TP.Tracer("test").Start(context.Background(), "consumer")
	if _, err := app.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	consumer.End()
	process := h.Ended("process orders")
	if len(process) != 2 {
		t.Fatalf("%d process spans, want 2", len(process))
	}
	if process[0].Parent.IsValid() {
		t.Errorf("a delivery without traceparent has parent %v, want a root span", process[0].Parent.SpanID())
	}
	if process[1].Parent.SpanID() != process[0].SpanContext.SpanID() || !oteltest.LinkedTo(process[1], process[0].SpanContext) {
		t.Errorf("the retry is not a linked child of the attempt that failed")
	}
}

// TestRetryThenDeadLetterKeepsOneTrace follows a message through a failed
// attempt, its retry and its dead letter: one trace, every attempt a child
// of the producer span, each linked to the one before, the copies keeping
// the original traceparent, and only the dead-lettered attempt an error.
func TestRetryThenDeadLetterKeepsOneTrace(t *testing.T) {
	h := newHarness(t)
	mem := bqtest.NewInMemoryTransport()
	app := newApp(h, mem, babelqueue.WithMaxAttempts(2))
	var seen []map[string]string
	app.Handle(testURN, func(ctx context.Context, _ *babelqueue.Envelope) error {
		seen = append(seen, maps.Clone(babelqueue.HeadersFromContext(ctx)))
		return errors.New("invalid transition")
	})
	if _, err := app.PublishWithHeaders(context.Background(), testURN, nil, map[string]string{"baggage": "tenant=7"}); err != nil {
		t.Fatal(err)
	}
	drain(t, app)

	send := h.Only(t, "send orders")
	process := h.Ended("process orders")
	if len(process) != 2 || len(seen) != 2 {
		t.Fatalf("%d process spans and %d handler calls, want 2", len(process), len(seen))
	}
	for i, p := range process {
		if p.SpanContext.TraceID() != send.SpanContext.TraceID() || p.Parent.SpanID() != send.SpanContext.SpanID() {
			t.Errorf("attempt %d is not a child of the send span", i)
		}
		if !hasEvent(p, "exception") {
			t.Errorf("attempt %d: the handler's error is not an exception event: %v", i, p.Events)
		}
	}
	oteltest.WantAttrs(t, process[0], map[string]string{"babelqueue.attempt": "0", "babelqueue.outcome": "retried", "babelqueue.reason": "failed"})
	oteltest.WantAttrs(t, process[1], map[string]string{"babelqueue.attempt": "1", "babelqueue.outcome": "dead_lettered", "babelqueue.reason": "failed", "babelqueue.target": "orders.dlq"})
	if process[0].Status.Code != codes.Unset || process[1].Status.Code != codes.Error {
		t.Errorf("statuses %v, %v: want unset, then error", process[0].Status, process[1].Status)
	}
	if !hasEvent(process[0], "babelqueue.retry") || !hasEvent(process[1], "babelqueue.dead_letter") {
		t.Errorf("settle writes are not events of their attempts: %v / %v", process[0].Events, process[1].Events)
	}
	if !oteltest.LinkedTo(process[1], process[0].SpanContext) {
		t.Errorf("the retry does not link to the failed attempt")
	}
	original := formatLink(send.SpanContext)
	if seen[1]["traceparent"] != original || seen[1][HeaderRetryLink] != formatLink(process[0].SpanContext) || seen[1]["baggage"] != "tenant=7" {
		t.Errorf("retry copy headers %v: want the original traceparent, the baggage and a link to attempt 0", seen[1])
	}
	dl := mem.Messages("orders.dlq")
	if len(dl) != 1 || dl[0].Headers["traceparent"] != original || dl[0].Headers[HeaderRetryLink] != formatLink(process[1].SpanContext) {
		t.Errorf("dead letter headers %v: want the original traceparent and a link to the last attempt", dl)
	}

	// Reading the dead-letter queue continues the message's trace.
	app.Handle(testURN, ok)
	drain(t, app, "orders.dlq")
	dlq := h.Only(t, "process orders.dlq")
	if dlq.Parent.SpanID() != send.SpanContext.SpanID() || !oteltest.LinkedTo(dlq, process[1].SpanContext) {
		t.Errorf("the dead letter's delivery is not a child of the send span linked to the last attempt")
	}
}

// TestRetryLinkCrossesProcessesInHeader: two Telemetry values stand for
// two processes sharing one exporter. The second knows the failed attempt
// only from the retry copy's HeaderRetryLink.
func TestRetryLinkCrossesProcessesInHeader(t *testing.T) {
	h := newHarness(t)
	second := newHarness(t)
	clock := bqtest.NewFakeClock(epoch)
	mem := bqtest.NewInMemoryTransport(bqtest.WithMemoryClock(clock), bqtest.WithMemoryRetryTiers(time.Minute))
	appA := newApp(h, mem, babelqueue.WithClock(clock))
	appA.Handle(testURN, func(context.Context, *babelqueue.Envelope) error { return errors.New("fail") })
	if _, err := appA.Publish(context.Background(), testURN, nil); err != nil {
		t.Fatal(err)
	}
	drain(t, appA)
	failed := h.Only(t, "process orders")

	clock.Advance(time.Minute)
	appB := newAppOf(second.tel, mem, babelqueue.WithClock(clock))
	appB.Handle(testURN, ok)
	drain(t, appB)
	retried := second.Only(t, "process orders")
	if !oteltest.LinkedTo(retried, failed.SpanContext) || retried.SpanContext.TraceID() != failed.SpanContext.TraceID() {
		t.Errorf("the retry in another process is not linked to the failed attempt in its trace: links %v", retried.Links)
	}
	oteltest.WantAttrs(t, retried, map[string]string{"babelqueue.attempt": "1", "babelqueue.outcome": "handled"})
}

// TestRedeliveryLinksFromMemory: a message handed back after a failed
// retry write comes back as it was, without HeaderRetryLink; its next
// delivery links to the failed attempt from the link memory, unless the
// memory is off.
func TestRedeliveryLinksFromMemory(t *testing.T) {
	for _, memory := range []int{DefaultLinkMemory, 0} {
		h := newHarness(t, WithLinkMemory(memory))
		mem := bqtest.NewInMemoryTransport()
		app := newApp(h, mem)
		var calls atomic.Int32
		app.Handle(testURN, failOnce(&calls))
		if _, err := app.Publish(context.Background(), testURN, nil); err != nil {
			t.Fatal(err)
		}
		mem.SetFault(func(op, _ string) error {
			if op == "retry" {
				return errors.New("refused")
			}
			return nil
		})
		if _, err := app.Drain(context.Background()); !errors.Is(err, babelqueue.ErrSettle) {
			t.Fatalf("Drain: %v, want ErrSettle", err)
		}
		mem.SetFault(nil)
		drain(t, app)
		process := h.Ended("process orders")
		if len(process) != 2 {
			t.Fatalf("%d process spans, want 2", len(process))
		}
		oteltest.WantAttrs(t, process[0], map[string]string{"babelqueue.outcome": "handed_back"})
		if linked := oteltest.LinkedTo(process[1], process[0].SpanContext); linked != (memory > 0) {
			t.Errorf("link memory %d: redelivery linked %v", memory, linked)
		}
	}
}

// deferring hands out every message with its headers deferred, as the
// Kafka binding's Receive does.
type deferring struct{ *bqtest.InMemoryTransport }

type mapSource map[string]string

func (s mapSource) LookupHeader(key string) (string, bool) { v, ok := s[key]; return v, ok }
func (s mapSource) HeaderMap() map[string]string           { return maps.Clone(s) }

func (d deferring) Receive(ctx context.Context, queue string, timeout time.Duration) (*babelqueue.ReceivedMessage, error) {
	msg, err := d.InMemoryTransport.Receive(ctx, queue, timeout)
	if msg != nil {
		headers := msg.Headers
		msg.Headers = nil
		msg.DeferHeaders(mapSource(headers))
	}
	return msg, err
}

func TestDeferredHeadersAreReadWithoutBeingBuilt(t *testing.T) {
	h := newHarness(t)
	mem := bqtest.NewInMemoryTransport()
	app := newApp(h, deferring{mem})
	var filled bool
	app.Handle(testURN, func(ctx context.Context, env *babelqueue.Envelope) error { return nil })
	if _, err := app.Publish(context.Background(), testURN, nil); err != nil {
		t.Fatal(err)
	}
	app2 := newApp(h, deferring{mem}, babelqueue.WithHooks(settleSpy(func(d *babelqueue.Delivery) { filled = d.Message.Headers != nil })))
	app2.Handle(testURN, ok)
	drain(t, app2)
	if filled {
		t.Error("the hooks built the deferred headers of a handled message")
	}
	p, send := h.Only(t, "process orders"), h.Only(t, "send orders")
	if p.Parent.SpanID() != send.SpanContext.SpanID() {
		t.Errorf("the process span's parent was not read from the deferred headers")
	}
}

// settleSpy is a SettleHook calling fn.
type settleSpy func(*babelqueue.Delivery)

func (f settleSpy) OnSettle(_ context.Context, d *babelqueue.Delivery, _ *babelqueue.Settlement) {
	f(d)
}

// TestTransportWithoutHeadersStillWorks: over a binding without the
// Headers feature the hooks' headers are dropped by the binding; publish
// and consume work, and each delivery is a root span.
func TestTransportWithoutHeadersStillWorks(t *testing.T) {
	h := newHarness(t)
	mem := bqtest.NewInMemoryTransport(bqtest.WithMemoryFeatures(driver.Features{Keys: true, HandBack: driver.HandBackRewind}))
	app := newApp(h, mem)
	var calls atomic.Int32
	app.Handle(testURN, failOnce(&calls))
	if _, err := app.Publish(context.Background(), testURN, nil); err != nil {
		t.Fatal(err)
	}
	drain(t, app)
	process := h.Ended("process orders")
	if len(process) != 2 || calls.Load() != 2 {
		t.Fatalf("%d process spans, %d handler calls; want 2 and 2", len(process), calls.Load())
	}
	for _, p := range process {
		if p.Parent.IsValid() {
			t.Errorf("a delivery without headers has parent %v, want a root span", p.Parent.SpanID())
		}
	}
	// Without headers the retry cannot carry the link: it comes from the
	// link memory.
	if !oteltest.LinkedTo(process[1], process[0].SpanContext) {
		t.Errorf("the retry does not link to the failed attempt")
	}
	oteltest.WantAttrs(t, process[1], map[string]string{"babelqueue.outcome": "handled", "babelqueue.attempt": "1"})
}
