package otel

import (
	"context"
	"log/slog"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"github.com/babelqueue/babelqueue-go/core/bqtest"
)

// runPublishDrain publishes b.N messages through an App over the
// in-memory transport, then drains them: the cost per message of a
// publish, a delivery, its handler and its acknowledgement.
func runPublishDrain(b *testing.B, hooks ...babelqueue.Hook) {
	opts := []babelqueue.Option{babelqueue.WithDefaultQueue("orders"), babelqueue.WithPollTimeout(time.Microsecond),
		babelqueue.WithLogger(slog.New(slog.DiscardHandler))}
	if len(hooks) > 0 {
		opts = append(opts, babelqueue.WithHooks(hooks...))
	}
	app, err := babelqueue.NewApp(bqtest.NewInMemoryTransport(), opts...)
	if err != nil {
		b.Fatal(err)
	}
	app.Handle(testURN, ok)
	ctx := context.Background()
	data := map[string]any{"order_id": 1042}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if _, err := app.Publish(ctx, testURN, data); err != nil {
			b.Fatal(err)
		}
	}
	if n, err := app.Drain(ctx); err != nil || n != b.N {
		b.Fatalf("Drain: %d of %d, %v", n, b.N, err)
	}
}

// BenchmarkAppHooks compares an App without hooks and one with the
// Telemetry hooks on a recording, always-sampling SDK (spans to a no-op
// exporter, metrics to a manual reader).
func BenchmarkAppHooks(b *testing.B) {
	b.Run("no-hooks", func(b *testing.B) { runPublishDrain(b) })
	b.Run("telemetry", func(b *testing.B) {
		tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(tracetest.NewNoopExporter()))
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
		defer func() { _ = tp.Shutdown(context.Background()); _ = mp.Shutdown(context.Background()) }()
		tel, err := New(WithTracerProvider(tp), WithMeterProvider(mp))
		if err != nil {
			b.Fatal(err)
		}
		runPublishDrain(b, tel.Hooks())
	})
}
