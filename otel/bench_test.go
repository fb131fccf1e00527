package otel

import (
	"context"
	"testing"
	"time"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// benchBody is a small conformant envelope.
const benchBody = `{"job":"urn:babel:orders:created","trace_id":"0b7c1c8e-4c1e-4b7a-9f39-7f1d1e1f0a11","data":{"order_id":1042},"meta":{"id":"9e2d6a3c-1f7b-4c55-8a0e-2b1f3c4d5e6f","queue":"orders","lang":"go","schema_version":1,"created_at":1749132727000},"attempts":0}`

// runPublishPopAck publishes, pops and acknowledges one message per
// iteration through tr.
func runPublishPopAck(b *testing.B, tr babelqueue.Transport) {
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if err := tr.Publish(ctx, "orders", benchBody); err != nil {
			b.Fatal(err)
		}
		msg, err := tr.Pop(ctx, "orders", time.Second)
		if err != nil || msg == nil {
			b.Fatalf("Pop: %v %v", msg, err)
		}
		if err := tr.Ack(ctx, msg); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPublishPopAck compares the in-memory transport bare and
// decorated with a recording, always-sampling SDK (spans go to a no-op
// exporter, metrics to a manual reader).
func BenchmarkPublishPopAck(b *testing.B) {
	b.Run("raw", func(b *testing.B) {
		runPublishPopAck(b, babelqueue.NewInMemoryTransport())
	})
	b.Run("decorated", func(b *testing.B) {
		tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(tracetest.NewNoopExporter()))
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
		defer func() { _ = tp.Shutdown(context.Background()); _ = mp.Shutdown(context.Background()) }()
		tel, err := New(WithTracerProvider(tp), WithMeterProvider(mp))
		if err != nil {
			b.Fatal(err)
		}
		runPublishPopAck(b, tel.Transport(babelqueue.NewInMemoryTransport()))
	})
}
