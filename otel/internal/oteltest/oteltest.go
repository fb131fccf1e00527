// Package oteltest records spans and metrics in memory for the tests of
// the otel module and of otel/integration, and reads them back.
package oteltest

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

// Recorder is a TracerProvider and a MeterProvider recording into memory,
// both shut down when the test ends.
type Recorder struct {
	Spans  *tracetest.InMemoryExporter
	TP     *sdktrace.TracerProvider
	MP     *sdkmetric.MeterProvider
	Reader *sdkmetric.ManualReader
}

// New returns a Recorder whose providers are shut down at the test's cleanup.
func New(t testing.TB) *Recorder {
	t.Helper()
	r := &Recorder{Spans: tracetest.NewInMemoryExporter(), Reader: sdkmetric.NewManualReader()}
	r.TP = sdktrace.NewTracerProvider(sdktrace.WithSyncer(r.Spans))
	r.MP = sdkmetric.NewMeterProvider(sdkmetric.WithReader(r.Reader))
	t.Cleanup(func() {
		_ = r.TP.Shutdown(context.Background())
		_ = r.MP.Shutdown(context.Background())
	})
	return r
}

// Ended returns the ended spans named name, in end order.
func (r *Recorder) Ended(name string) []tracetest.SpanStub {
	var out []tracetest.SpanStub
	for _, s := range r.Spans.GetSpans() {
		if s.Name == name {
			out = append(out, s)
		}
	}
	return out
}

// Only returns the one ended span named name, failing the test when there
// is not exactly one.
func (r *Recorder) Only(t testing.TB, name string) tracetest.SpanStub {
	t.Helper()
	got := r.Ended(name)
	if len(got) != 1 {
		t.Fatalf("%d ended spans named %q, want 1 (all: %v)", len(got), name, SpanNames(r.Spans.GetSpans()))
	}
	return got[0]
}

// SpanNames returns the names of spans, in order.
func SpanNames(spans tracetest.SpanStubs) []string {
	out := make([]string, len(spans))
	for i, s := range spans {
		out[i] = s.Name
	}
	return out
}

// Attrs returns the attributes of s as a map of their emitted strings.
func Attrs(s tracetest.SpanStub) map[string]string {
	m := make(map[string]string, len(s.Attributes))
	for _, kv := range s.Attributes {
		m[string(kv.Key)] = kv.Value.String()
	}
	return m
}

// WantAttrs fails t unless s has every attribute of want.
func WantAttrs(t testing.TB, s tracetest.SpanStub, want map[string]string) {
	t.Helper()
	got := Attrs(s)
	for k, v := range want {
		if got[k] != v {
			t.Errorf("span %q: attribute %s = %q, want %q (all: %v)", s.Name, k, got[k], v, got)
		}
	}
}

// LinkedTo reports whether s links to the span context of other.
func LinkedTo(s tracetest.SpanStub, other trace.SpanContext) bool {
	for _, l := range s.Links {
		if l.SpanContext.SpanID() == other.SpanID() && l.SpanContext.TraceID() == other.TraceID() {
			return true
		}
	}
	return false
}

// Collect reads the metrics recorded so far.
func (r *Recorder) Collect(t testing.TB) metricdata.ResourceMetrics {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.Reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	return rm
}

// FindMetric returns the metric named name in rm, and whether there is one.
func FindMetric(rm metricdata.ResourceMetrics, name string) (metricdata.Metrics, bool) {
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name == name {
				return m, true
			}
		}
	}
	return metricdata.Metrics{}, false
}

// Matches reports whether set has every attribute of want; an empty
// wanted value means the attribute must be absent.
func Matches(set attribute.Set, want map[string]string) bool {
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

// Count returns the sum of the counter name over the data points having
// every attribute of want; 0 when nothing was counted yet. A metric of
// another kind fails the test.
func (r *Recorder) Count(t testing.TB, name string, want map[string]string) int64 {
	t.Helper()
	m, ok := FindMetric(r.Collect(t), name)
	if !ok {
		return 0
	}
	sum, ok := m.Data.(metricdata.Sum[int64])
	if !ok {
		t.Fatalf("%s is a %T, want a Sum[int64]", name, m.Data)
	}
	var n int64
	for _, dp := range sum.DataPoints {
		if Matches(dp.Attributes, want) {
			n += dp.Value
		}
	}
	return n
}

// Observations returns the number of values recorded by the histogram
// name over the data points having every attribute of want, and their sum.
// A metric of another kind fails the test.
func (r *Recorder) Observations(t testing.TB, name string, want map[string]string) (uint64, float64) {
	t.Helper()
	m, ok := FindMetric(r.Collect(t), name)
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
		if Matches(dp.Attributes, want) {
			n += dp.Count
			sum += dp.Sum
		}
	}
	return n, sum
}
