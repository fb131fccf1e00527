package otel

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"github.com/babelqueue/babelqueue-go/core/driver"
	"github.com/babelqueue/babelqueue-go/core/redrive"
	"github.com/babelqueue/babelqueue-go/core/wire"

	"github.com/babelqueue/babelqueue-go/otel/internal/oteltest"
)

// TestInstrumentsHaveUnitsAndDescriptions feeds every hook directly (as
// the App, Redrive and a re-injector call them) and checks every
// instrument was recorded with its unit and a description.
func TestInstrumentsHaveUnitsAndDescriptions(t *testing.T) {
	h := newHarness(t, WithSystem("kafka"))
	hooks := h.tel.Hooks()
	ctx := context.Background()
	out := &driver.Outgoing{Intent: driver.IntentPublish, Queue: "q", Body: "{}", Headers: map[string]string{}}
	hooks.OnPublished(hooks.OnPublish(ctx, out), out, driver.Receipt{}, nil)
	msg := &babelqueue.ReceivedMessage{Queue: "q", Body: "x"}
	for _, s := range []babelqueue.Settlement{
		{Outcome: babelqueue.OutcomeRetried, Reason: wire.ReasonFailed, Target: "q.retry.1", HandlerRan: true, HandlerDuration: 20 * time.Millisecond},
		{Outcome: babelqueue.OutcomeDeadLettered, Reason: wire.ReasonPoison, Target: "q.dlq"},
		{Outcome: babelqueue.OutcomeDropped, Reason: wire.ReasonVersionGated},
	} {
		d := &babelqueue.Delivery{Message: msg, Queue: "q", URN: testURN}
		hooks.OnSettle(hooks.OnDelivery(ctx, d), d, &s)
	}
	for range 3 {
		hooks.OnRedrive(ctx, "q.dlq", redrive.Item{Target: "q", Outcome: redrive.Moved})
	}
	hooks.OnReinject(ctx, &driver.Reinjection{Tier: "q.retry.1", TierIndex: 1, Queue: "q", Delay: time.Second, Lag: 1500 * time.Millisecond})

	want := map[string]string{
		MetricSentMessages: "{message}", MetricConsumedMessages: "{message}", MetricRetried: "{message}",
		MetricDeadLettered: "{message}", MetricPoison: "{message}", MetricVersionGated: "{message}",
		MetricRedriven: "{message}", MetricProcessDuration: "s", MetricOperationDuration: "s", MetricReinjectLag: "s",
	}
	rm := h.Collect(t)
	for name, unit := range want {
		got, ok := oteltest.FindMetric(rm, name)
		if !ok {
			t.Errorf("%s not recorded", name)
			continue
		}
		if got.Unit != unit || got.Description == "" {
			t.Errorf("%s: unit %q description %q, want unit %q and a description", name, got.Unit, got.Description, unit)
		}
	}
	if n := h.Count(t, MetricRedriven, map[string]string{"messaging.system": "kafka", "messaging.destination.name": "q"}); n != 3 {
		t.Errorf("redriven = %d, want 3", n)
	}
	if n, sum := h.Observations(t, MetricProcessDuration, map[string]string{"babelqueue.urn": testURN, "error.type": "_OTHER"}); n != 1 || math.Abs(sum-0.02) > 1e-9 {
		t.Errorf("handler duration: %d observations summing to %v, want 1 of 0.02s", n, sum)
	}
}

// TestSettleWithoutDeliveryStillCounts: a SettleHook call whose context
// did not come from OnDelivery (another hook dropped it, say) is still
// counted exactly; it just has no span to end.
func TestSettleWithoutDeliveryStillCounts(t *testing.T) {
	h := newHarness(t)
	d := &babelqueue.Delivery{Message: &babelqueue.ReceivedMessage{Queue: "orders"}, Queue: "orders", URN: testURN}
	h.tel.Hooks().OnSettle(context.Background(), d, &babelqueue.Settlement{Outcome: babelqueue.OutcomeDeadLettered,
		Reason: wire.ReasonFailed, Target: "orders.dlq", HandlerRan: true, HandlerDuration: time.Second})
	want := expandCounters([]string{"consumed outcome=dead_lettered reason=failed error=failed", "dead_lettered reason=failed target=orders.dlq"})
	got := h.counters(t)
	if len(got) != len(want) {
		t.Fatalf("counters %v, want %v", sortedKeys(got), sortedKeys(want))
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %d, want %d", k, got[k], v)
		}
	}
	if n, sum := h.Observations(t, MetricProcessDuration, map[string]string{"error.type": "_OTHER"}); n != 1 || sum != 1 {
		t.Errorf("handler duration: %d observations summing %v, want 1 of 1s", n, sum)
	}
	if spans := h.Spans.GetSpans(); len(spans) != 0 {
		t.Errorf("%d spans ended without a delivery", len(spans))
	}
}

func TestReinjectLagPerWorkQueue(t *testing.T) {
	h := newHarness(t, WithSystem("kafka"))
	hooks := h.tel.Hooks()
	for _, r := range []driver.Reinjection{
		{Tier: "orders.retry.1", TierIndex: 1, Queue: "orders", Delay: 5 * time.Second, Lag: 1500 * time.Millisecond},
		{Tier: "orders.retry.2", TierIndex: 2, Queue: "orders", Delay: 30 * time.Second, Lag: 250 * time.Millisecond},
		{Tier: "payments.retry.1", TierIndex: 1, Queue: "payments", Delay: 5 * time.Second, Lag: 3 * time.Second},
		{Tier: "payments.retry.1", TierIndex: 1, Queue: "payments", Lag: time.Hour, Err: errors.New("write refused")},
	} {
		hooks.OnReinject(context.Background(), &r)
	}
	for _, c := range []struct {
		queue string
		n     uint64
		sum   float64
	}{{"orders", 2, 1.75}, {"payments", 1, 3}} {
		n, sum := h.Observations(t, MetricReinjectLag, map[string]string{"messaging.system": "kafka", "messaging.destination.name": c.queue})
		if n != c.n || math.Abs(sum-c.sum) > 1e-9 {
			t.Errorf("%s: %d observations summing %vs, want %d summing %vs", c.queue, n, sum, c.n, c.sum)
		}
	}
}

func TestOptionsRejectBadValues(t *testing.T) {
	for name, opt := range map[string]Option{
		"nil tracer provider": WithTracerProvider(nil),
		"nil meter provider":  WithMeterProvider(nil),
		"nil propagator":      WithPropagator(nil),
		"blank system":        WithSystem(" "),
		"negative memory":     WithLinkMemory(-1),
	} {
		if _, err := New(opt); !errors.Is(err, babelqueue.ErrInvalidOption) {
			t.Errorf("%s: New returned %v, want ErrInvalidOption", name, err)
		}
	}
	tel, err := New(nil, WithLinkMemory(0))
	if err != nil || tel.cfg.system != DefaultSystem || tel.links.cap != 0 {
		t.Errorf("defaults: %v, system %q", err, tel.cfg.system)
	}
}

// TestNewReportsEveryOptionProblem passes several bad options at once and
// checks that the one error names each of them, not only the first.
func TestNewReportsEveryOptionProblem(t *testing.T) {
	_, err := New(WithSystem(""), WithLinkMemory(-3), WithPropagator(nil))
	if !errors.Is(err, babelqueue.ErrInvalidOption) {
		t.Fatalf("New returned %v, want ErrInvalidOption", err)
	}
	joined, ok := err.(interface{ Unwrap() []error })
	if !ok || len(joined.Unwrap()) != 3 {
		t.Fatalf("New returned %v, want three joined option errors", err)
	}
	for _, want := range []string{"blank messaging system", "negative link memory -3", "nil propagator"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not report %q", err, want)
		}
	}
}

func TestLinkMemoryIsBounded(t *testing.T) {
	l := newLinkMemory(2)
	sc := func(b byte) trace.SpanContext {
		return trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{b}, SpanID: trace.SpanID{b}})
	}
	for i, id := range []string{"a", "b", "c"} {
		l.put(id, sc(byte(i+1)))
	}
	if _, ok := l.take("a"); ok {
		t.Error("the oldest link was kept past the bound")
	}
	if got, ok := l.take("b"); !ok || got.SpanID() != sc(2).SpanID() {
		t.Errorf("link b = %v, %v", got, ok)
	}
	if _, ok := l.take("b"); ok {
		t.Error("a taken link was given twice")
	}
	// Re-putting and taking many times keeps the bookkeeping bounded.
	for range 1000 {
		l.put("d", sc(4))
		l.take("d")
	}
	if len(l.order) > 2*l.cap+16 || len(l.spans) > l.cap {
		t.Errorf("bookkeeping grew: order %d, spans %d", len(l.order), len(l.spans))
	}
	if got, ok := l.take("c"); !ok || got.SpanID() != sc(3).SpanID() {
		t.Errorf("link c lost to the bookkeeping: %v, %v", got, ok)
	}
}

func TestAttrCacheIsBoundedAndExact(t *testing.T) {
	h := newHarness(t)
	c := h.tel.attrs
	for i := range maxCachedAttrs + 500 {
		c.at("q", AttrURN.String(fmt.Sprintf("urn:babel:u%d", i)))
	}
	if len(c.opts) != maxCachedAttrs {
		t.Errorf("%d cached combinations, want the bound %d", len(c.opts), maxCachedAttrs)
	}
	// Past the bound, and for a cached combination, the attributes are
	// still those asked for.
	for _, urn := range []string{"urn:babel:u3", "urn:babel:u1400"} {
		h.tel.m.poison.Add(context.Background(), 1, c.at("q", AttrURN.String(urn)))
		if n := h.Count(t, MetricPoison, map[string]string{"babelqueue.urn": urn, "messaging.destination.name": "q", "messaging.system": DefaultSystem}); n != 1 {
			t.Errorf("%s counted %d, want 1", urn, n)
		}
	}
	if c.at("q", AttrOutcome.String("a"), AttrReason.String("b")) == c.at("q", AttrOutcome.String("a")) {
		t.Error("a combination with a reason shares the option of one without")
	}
}
