package otel

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// harness is a Telemetry recording into in-memory exporters.
type harness struct {
	tel    *Telemetry
	spans  *tracetest.InMemoryExporter
	tp     *sdktrace.TracerProvider
	reader *sdkmetric.ManualReader
}

func newHarness(t testing.TB, opts ...Option) *harness {
	t.Helper()
	h := &harness{spans: tracetest.NewInMemoryExporter(), reader: sdkmetric.NewManualReader()}
	h.tp = sdktrace.NewTracerProvider(sdktrace.WithSyncer(h.spans))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(h.reader))
	t.Cleanup(func() {
		_ = h.tp.Shutdown(context.Background())
		_ = mp.Shutdown(context.Background())
	})
	tel, err := New(append([]Option{WithTracerProvider(h.tp), WithMeterProvider(mp)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	h.tel = tel
	return h
}

// ended returns the ended spans named name, in end order.
func (h *harness) ended(name string) []tracetest.SpanStub {
	var out []tracetest.SpanStub
	for _, s := range h.spans.GetSpans() {
		if s.Name == name {
			out = append(out, s)
		}
	}
	return out
}

// only returns the one ended span named name.
func (h *harness) only(t testing.TB, name string) tracetest.SpanStub {
	t.Helper()
	got := h.ended(name)
	if len(got) != 1 {
		t.Fatalf("%d ended spans named %q, want 1 (all: %v)", len(got), name, spanNames(h.spans.GetSpans()))
	}
	return got[0]
}

func spanNames(spans tracetest.SpanStubs) []string {
	out := make([]string, len(spans))
	for i, s := range spans {
		out[i] = s.Name
	}
	return out
}

// attrs returns the attributes of s as a map of their emitted strings.
func attrs(s tracetest.SpanStub) map[string]string {
	m := make(map[string]string, len(s.Attributes))
	for _, kv := range s.Attributes {
		m[string(kv.Key)] = kv.Value.String()
	}
	return m
}

// wantAttrs fails t unless s has every attribute of want.
func wantAttrs(t testing.TB, s tracetest.SpanStub, want map[string]string) {
	t.Helper()
	got := attrs(s)
	for k, v := range want {
		if got[k] != v {
			t.Errorf("span %q: attribute %s = %q, want %q (all: %v)", s.Name, k, got[k], v, got)
		}
	}
}

func hasEvent(s tracetest.SpanStub, name string) bool {
	for _, e := range s.Events {
		if e.Name == name {
			return true
		}
	}
	return false
}

// linkedTo reports whether s links to the span context of other.
func linkedTo(s tracetest.SpanStub, other trace.SpanContext) bool {
	for _, l := range s.Links {
		if l.SpanContext.SpanID() == other.SpanID() && l.SpanContext.TraceID() == other.TraceID() {
			return true
		}
	}
	return false
}

// collect reads the metrics recorded so far.
func (h *harness) collect(t testing.TB) metricdata.ResourceMetrics {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := h.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	return rm
}

func findMetric(rm metricdata.ResourceMetrics, name string) (metricdata.Metrics, bool) {
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name == name {
				return m, true
			}
		}
	}
	return metricdata.Metrics{}, false
}

// matches reports whether set has every attribute of want; an empty
// wanted value means the attribute must be absent.
func matches(set attribute.Set, want map[string]string) bool {
	for k, v := range want {
		got, ok := set.Value(attribute.Key(k))
		if v == "" {
			if ok {
				return false
			}
			continue
		}
		if !ok || got.String() != v {
			return false
		}
	}
	return true
}

// count returns the sum of the counter name over the data points having
// every attribute of want.
func (h *harness) count(t testing.TB, name string, want map[string]string) int64 {
	t.Helper()
	m, ok := findMetric(h.collect(t), name)
	if !ok {
		return 0
	}
	sum, ok := m.Data.(metricdata.Sum[int64])
	if !ok {
		t.Fatalf("%s is a %T, want a Sum[int64]", name, m.Data)
	}
	var n int64
	for _, dp := range sum.DataPoints {
		if matches(dp.Attributes, want) {
			n += dp.Value
		}
	}
	return n
}

// observations returns the number of values recorded by the histogram
// name over the data points having every attribute of want, and their sum.
func (h *harness) observations(t testing.TB, name string, want map[string]string) (uint64, float64) {
	t.Helper()
	m, ok := findMetric(h.collect(t), name)
	if !ok {
		return 0, 0
	}
	hist, ok := m.Data.(metricdata.Histogram[float64])
	if !ok {
		t.Fatalf("%s is a %T, want a Histogram[float64]", name, m.Data)
	}
	var n uint64
	var sum float64
	for _, dp := range hist.DataPoints {
		if matches(dp.Attributes, want) {
			n += dp.Count
			sum += dp.Sum
		}
	}
	return n, sum
}
