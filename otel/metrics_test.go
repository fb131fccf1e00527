package otel

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
)

func TestInstrumentsHaveUnitsAndDescriptions(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	m := h.tel.Metrics()
	m.Published(ctx, "kafka", "q")
	m.Handled(ctx, "kafka", "q", OutcomeSuccess)
	m.Retried(ctx, "kafka", "q", babelqueue.ReasonFailed)
	m.DeadLettered(ctx, "kafka", "q", babelqueue.ReasonPoison)
	m.Poison(ctx, "kafka", "q")
	m.VersionGated(ctx, "kafka", "q")
	m.Redriven(ctx, "kafka", "q", 3)
	m.HandlerDuration(ctx, "kafka", "q", testURN, 20*time.Millisecond, false)
	m.ReinjectLag(ctx, "kafka", "q", 1500*time.Millisecond)

	want := map[string]string{
		MetricPublished: "{message}", MetricHandled: "{message}", MetricRetried: "{message}",
		MetricDeadLettered: "{message}", MetricPoison: "{message}", MetricVersionGated: "{message}",
		MetricRedriven: "{message}", MetricHandlerDuration: "s", MetricReinjectLag: "s",
	}
	rm := h.collect(t)
	for name, unit := range want {
		got, ok := findMetric(rm, name)
		if !ok {
			t.Errorf("%s not recorded", name)
			continue
		}
		if got.Unit != unit || got.Description == "" {
			t.Errorf("%s: unit %q description %q, want unit %q and a description", name, got.Unit, got.Description, unit)
		}
	}
	if n := h.count(t, MetricRedriven, map[string]string{"messaging.system": "kafka", "messaging.destination.name": "q"}); n != 3 {
		t.Errorf("redriven = %d, want 3", n)
	}
	if n, sum := h.observations(t, MetricReinjectLag, map[string]string{"messaging.destination.name": "q"}); n != 1 || math.Abs(sum-1.5) > 1e-9 {
		t.Errorf("reinject lag: %d observations summing to %v, want 1 of 1.5s", n, sum)
	}
	if n, sum := h.observations(t, MetricHandlerDuration, map[string]string{"babelqueue.urn": testURN}); n != 1 || math.Abs(sum-0.02) > 1e-9 {
		t.Errorf("handler duration: %d observations summing to %v, want 1 of 0.02s", n, sum)
	}
}

func TestRedriveResultRecordsMovedPerTarget(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	res := &babelqueue.RedriveResult{Moved: 3, Items: []babelqueue.RedriveItem{
		{Target: "a", Outcome: babelqueue.RedriveMoved},
		{Target: "b", Outcome: babelqueue.RedriveMoved},
		{Target: "a", Outcome: babelqueue.RedriveUnselected},
		{Target: "a", Outcome: babelqueue.RedriveMoved},
	}}
	h.tel.Metrics().RedriveResult(ctx, "pulsar", res)
	h.tel.Metrics().RedriveResult(ctx, "pulsar", &babelqueue.RedriveResult{DryRun: true, Moved: 5,
		Items: []babelqueue.RedriveItem{{Target: "a", Outcome: babelqueue.RedriveWouldMove}}})
	if n := h.count(t, MetricRedriven, map[string]string{"messaging.destination.name": "a"}); n != 2 {
		t.Errorf("redriven{a} = %d, want 2", n)
	}
	if n := h.count(t, MetricRedriven, map[string]string{"messaging.destination.name": "b"}); n != 1 {
		t.Errorf("redriven{b} = %d, want 1", n)
	}
	// Items cut at MaxRedriveItems: the rest is counted under the last target.
	h.tel.Metrics().RedriveResult(ctx, "pulsar", &babelqueue.RedriveResult{Moved: 4,
		Items: []babelqueue.RedriveItem{{Target: "c", Outcome: babelqueue.RedriveMoved}}})
	if n := h.count(t, MetricRedriven, map[string]string{"messaging.destination.name": "c"}); n != 4 {
		t.Errorf("redriven{c} = %d, want 4", n)
	}
}

func TestNilMetricsRecordsNothing(t *testing.T) {
	var m *Metrics
	ctx := context.Background()
	m.Published(ctx, "s", "q")
	m.Handled(ctx, "s", "q", OutcomeSuccess)
	m.HandlerDuration(ctx, "s", "q", "u", time.Second, true)
	m.ReinjectLag(ctx, "s", "q", time.Second)
	m.RedriveResult(ctx, "s", &babelqueue.RedriveResult{Moved: 1})
}

func TestOptionsRejectBadValues(t *testing.T) {
	for name, opt := range map[string]Option{
		"nil tracer provider": WithTracerProvider(nil),
		"nil meter provider":  WithMeterProvider(nil),
		"nil propagator":      WithPropagator(nil),
		"blank system":        WithSystem(" "),
		"negative memory":     WithLinkMemory(-1),
		"zero open":           WithMaxOpenDeliveries(0),
	} {
		if _, err := New(opt); !errors.Is(err, babelqueue.ErrInvalidOption) {
			t.Errorf("%s: New returned %v, want ErrInvalidOption", name, err)
		}
	}
	if tel, err := New(nil, WithLinkMemory(0)); err != nil || tel == nil {
		t.Errorf("defaults: %v", err)
	}
}

func TestLinkMemoryIsBounded(t *testing.T) {
	r := newRegistry(1, 2)
	h := newHarness(t)
	_, s := h.tel.tracer.Start(context.Background(), "x")
	defer s.End()
	for _, id := range []string{"a", "b", "c"} {
		r.remember(id, s.SpanContext())
	}
	if _, ok := r.recalled("a"); ok {
		t.Error("oldest link kept past the bound")
	}
	for _, id := range []string{"b", "c"} {
		if _, ok := r.recalled(id); !ok {
			t.Errorf("link %s forgotten", id)
		}
	}
}
