package babelqueue

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/babelqueue/babelqueue-go/core/bqtest"
	"github.com/babelqueue/babelqueue-go/core/driver"
)

// BenchmarkDrainInMemory measures the App's per-message cost (version gate,
// decode, routing, handler call, ack) against a bare Pop+Ack loop on the
// same bqtest.InMemoryTransport. It prints
// "bench: app_drain_inmemory ours=<ns/msg> raw=<ns/msg> ratio=<ours/raw>".
func BenchmarkDrainInMemory(b *testing.B) {
	ctx := context.Background()
	body := func() string {
		env, _ := Make("urn:bench:order", map[string]any{"order_id": 1042, "sku": "A-1"}, WithQueue("bench"))
		raw, _ := env.Encode()
		return string(raw)
	}()
	fill := func(mem *bqtest.InMemoryTransport) {
		for i := 0; i < b.N; i++ {
			mem.Publish(ctx, "bench", body)
		}
	}

	raw := bqtest.NewInMemoryTransport()
	fill(raw)
	b.ResetTimer()
	start := time.Now()
	for {
		m, _ := raw.Pop(ctx, "bench", 0)
		if m == nil {
			break
		}
		raw.Ack(ctx, m)
	}
	rawNs := float64(time.Since(start).Nanoseconds()) / float64(b.N)

	b.StopTimer()
	mem := bqtest.NewInMemoryTransport()
	fill(mem)
	a, err := NewApp(mem, WithPollTimeout(time.Microsecond), WithLogger(quietLogger()))
	if err != nil {
		b.Fatal(err)
	}
	a.Handle("urn:bench:order", func(context.Context, *Envelope) error { return nil })
	b.StartTimer()
	start = time.Now()
	n, err := a.Drain(ctx, "bench")
	oursNs := float64(time.Since(start).Nanoseconds()) / float64(b.N)
	if err != nil || n != b.N {
		b.Fatalf("Drain = %d, %v", n, err)
	}
	b.ReportMetric(oursNs, "ours-ns/msg")
	b.ReportMetric(rawNs, "raw-ns/msg")
	if b.N >= 1000 {
		fmt.Printf("bench: app_drain_inmemory ours=%.0f raw=%.0f ratio=%.2f\n", oursNs, rawNs, oursNs/rawNs)
	}
}

// BenchmarkRetryPathInMemory measures a failing delivery settled by the
// generic republish retry (wire.SetAttempts, header republish, ack). It prints
// "bench: app_retry_inmemory value=<ns/msg>".
func BenchmarkRetryPathInMemory(b *testing.B) {
	ctx := context.Background()
	mem := bqtest.NewInMemoryTransport()
	env, _ := Make("urn:bench:order", map[string]any{"order_id": 1042}, WithQueue("bench"))
	raw, _ := env.Encode()
	for i := 0; i < b.N; i++ {
		mem.Publish(ctx, "bench", string(raw))
	}
	a, err := NewApp(mem, WithPollTimeout(time.Microsecond), WithLogger(quietLogger()),
		WithMaxAttempts(1<<30), WithOnError(func(error) {}))
	if err != nil {
		b.Fatal(err)
	}
	a.Handle("urn:bench:order", func(context.Context, *Envelope) error { return errBench })
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		m, _ := mem.Pop(ctx, "bench", 0)
		if out := a.deliver(ctx, m); out.err != nil {
			b.Fatal(out.err)
		}
	}
	ns := float64(time.Since(start).Nanoseconds()) / float64(b.N)
	if b.N >= 1000 {
		fmt.Printf("bench: app_retry_inmemory value=%.0f\n", ns)
	}
}

var errBench = fmt.Errorf("bench failure")

// noopHooks implements every App hook and does nothing.
type noopHooks struct{}

func (noopHooks) OnPublish(ctx context.Context, _ *driver.Outgoing) context.Context    { return ctx }
func (noopHooks) OnPublished(context.Context, *driver.Outgoing, driver.Receipt, error) {}
func (noopHooks) OnDelivery(ctx context.Context, _ *Delivery) context.Context          { return ctx }
func (noopHooks) OnSettle(context.Context, *Delivery, *Settlement)                     {}

// BenchmarkDrainHooks measures what hooks cost the App's consume path: the
// same Drain with no hooks and with no-op hooks of every kind, in
// alternating rounds. It prints
// "bench: app_drain_hooks ours=<ns/msg with no-op hooks> raw=<ns/msg without hooks> ratio=<ours/raw>".
func BenchmarkDrainHooks(b *testing.B) {
	ctx := context.Background()
	env, _ := Make("urn:bench:order", map[string]any{"order_id": 1042, "sku": "A-1"}, WithQueue("bench"))
	raw, _ := env.Encode()
	round := func(opts ...Option) float64 {
		mem := bqtest.NewInMemoryTransport()
		for i := 0; i < b.N; i++ {
			mem.Publish(ctx, "bench", string(raw))
		}
		a, err := NewApp(mem, append(opts, WithPollTimeout(time.Microsecond), WithLogger(quietLogger()))...)
		if err != nil {
			b.Fatal(err)
		}
		a.Handle("urn:bench:order", func(context.Context, *Envelope) error { return nil })
		start := time.Now()
		if n, err := a.Drain(ctx, "bench"); err != nil || n != b.N {
			b.Fatalf("Drain = %d, %v", n, err)
		}
		return float64(time.Since(start).Nanoseconds()) / float64(b.N)
	}
	var none, hooked float64
	for r := 0; r < 3; r++ {
		none += round()
		hooked += round(WithHooks(noopHooks{}))
	}
	if b.N >= 1000 {
		fmt.Printf("bench: app_drain_hooks ours=%.0f raw=%.0f ratio=%.2f\n", hooked/3, none/3, hooked/none)
	}
}
