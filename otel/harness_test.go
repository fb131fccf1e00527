package otel

import (
	"testing"

	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/babelqueue/babelqueue-go/otel/internal/oteltest"
)

// harness is a Telemetry recording into in-memory exporters.
type harness struct {
	*oteltest.Recorder
	tel *Telemetry
}

func newHarness(t testing.TB, opts ...Option) *harness {
	t.Helper()
	h := &harness{Recorder: oteltest.New(t)}
	tel, err := New(append([]Option{WithTracerProvider(h.TP), WithMeterProvider(h.MP)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	h.tel = tel
	return h
}

func hasEvent(s tracetest.SpanStub, name string) bool {
	for _, e := range s.Events {
		if e.Name == name {
			return true
		}
	}
	return false
}
