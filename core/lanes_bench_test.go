package babelqueue

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/babelqueue/babelqueue-go/core/bqtest"
)

// BenchmarkConsumeConcurrentInMemory measures an App with 64 handlers at
// once (OrderKey, 200 keys over 6 partitions) whose handler sleeps 5 ms,
// against the ceiling of 64 handlers per 5 ms. It prints
// "bench: app-inmemory-io-bound-throughput ours=<msg/s> ceiling=<msg/s> ratio=<ours/ceiling>".
func BenchmarkConsumeConcurrentInMemory(b *testing.B) {
	const (
		inFlight = 64
		latency  = 5 * time.Millisecond
	)
	total := int64(max(b.N, 2*inFlight))
	took, _ := consumeKeyedInMemory(b, inFlight, total, latency)
	ours := float64(total) / took.Seconds()
	ceiling := float64(inFlight) / latency.Seconds()
	b.ReportMetric(ours, "msg/s")
	if total >= 1000 {
		fmt.Printf("bench: app-inmemory-io-bound-throughput ours=%.0f ceiling=%.0f ratio=%.2f\n", ours, ceiling, ours/ceiling)
	}
}

// BenchmarkConsumeConcurrentNoOpInMemory measures the cost of the
// concurrent loop itself: a handler that returns at once, 200 keys over 6
// partitions of the in-memory transport, with 64 handlers at once
// (OrderKey) and, for comparison, the one-at-a-time loop. It reports
// msg/s and the process CPU time per message (cpu-ns/msg, user and
// system), which a loaded host changes less than the rate.
func BenchmarkConsumeConcurrentNoOpInMemory(b *testing.B) {
	for _, n := range []int{1, 64} {
		b.Run(fmt.Sprintf("handlers=%d", n), func(b *testing.B) { benchNoOpInMemory(b, n) })
	}
}

func benchNoOpInMemory(b *testing.B, inFlight int) {
	total := int64(max(b.N, 128))
	took, cpu := consumeKeyedInMemory(b, inFlight, total, 0)
	b.ReportMetric(float64(total)/took.Seconds(), "msg/s")
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(total), "cpu-ns/msg")
}

// consumeKeyedInMemory publishes total messages over 200 keys to the 6
// partitions of an in-memory transport, then consumes them with an App
// running inFlight handlers at once (OrderKey), each sleeping latency (0:
// returning at once). It times the consume for b and returns its wall
// time and the process CPU time it took.
func consumeKeyedInMemory(b *testing.B, inFlight int, total int64, latency time.Duration) (took, cpu time.Duration) {
	const keys = 200
	ctx := context.Background()
	mem := bqtest.NewInMemoryTransport(bqtest.WithMemoryPartitions(6))
	a, err := NewApp(mem, WithPollTimeout(time.Hour), WithLogger(quietLogger()), WithConcurrency(inFlight, OrderKey))
	if err != nil {
		b.Fatal(err)
	}
	var done atomic.Int64
	finished := make(chan struct{})
	a.Handle("urn:t:bench", func(context.Context, *Envelope) error {
		if latency > 0 {
			time.Sleep(latency)
		}
		if done.Add(1) == total {
			close(finished)
		}
		return nil
	})
	for i := range total {
		key := []byte(fmt.Sprintf("key-%d", i%keys))
		if _, err := a.Publish(ctx, "urn:t:bench", map[string]int64{"n": i}, ToQueue("bench"), WithKey(key)); err != nil {
			b.Fatal(err)
		}
	}
	return timeConsume(b, a, "bench", finished)
}

// timeConsume times a's Consume of queue for b until finished is closed,
// then stops it: the wall time and the process CPU time it took.
func timeConsume(b *testing.B, a *App, queue string, finished <-chan struct{}) (took, cpu time.Duration) {
	cctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	runtime.GC()
	b.ResetTimer()
	cpu0 := bqtest.ProcessCPU()
	start := time.Now()
	go func() { errc <- a.Consume(cctx, queue) }()
	<-finished
	took = time.Since(start)
	cpu = bqtest.ProcessCPU() - cpu0
	b.StopTimer()
	cancel()
	if err := <-errc; err != nil {
		b.Fatal(err)
	}
	return took, cpu
}
