package babelqueue

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/babelqueue/babelqueue-go/core/bqtest"
)

// BenchmarkConsumeConcurrentHotKeyInMemory measures the concurrent loop
// (64 handlers, OrderKey, no-op handler) on one key whose lane holds every
// pending message, the queue filled beforehand: each settle frees a slot
// at the bound. ready=false is the in-memory transport (a parked worker is
// woken to receive into each freed slot), ready=true the same with
// driver.ReadyReceiver (the settling worker refills the slot itself). It
// reports msg/s, the process CPU time per message (cpu-ns/msg) and the
// share of messages taken through ReceiveReady (refills/msg).
func BenchmarkConsumeConcurrentHotKeyInMemory(b *testing.B) {
	for _, ready := range []bool{false, true} {
		b.Run(fmt.Sprintf("ready=%v", ready), func(b *testing.B) {
			total := int64(max(b.N, 1024))
			mem := bqtest.NewInMemoryTransport(bqtest.WithMemoryPartitions(1))
			var tr Transport = mem
			rm := &readyMemory{InMemoryTransport: mem}
			if ready {
				tr = rm
			}
			a, err := NewApp(tr, WithPollTimeout(time.Hour), WithLogger(quietLogger()), WithConcurrency(64, OrderKey))
			if err != nil {
				b.Fatal(err)
			}
			var done atomic.Int64
			finished := make(chan struct{})
			a.Handle("urn:t:bench", func(context.Context, *Envelope) error {
				if done.Add(1) == total {
					close(finished)
				}
				return nil
			})
			ctx := context.Background()
			for i := range total {
				if _, err := a.Publish(ctx, "urn:t:bench", map[string]int64{"n": i}, ToQueue("bench"), WithKey([]byte("hot"))); err != nil {
					b.Fatal(err)
				}
			}
			took, cpu := timeConsume(b, a, "bench", finished)
			b.ReportMetric(float64(total)/took.Seconds(), "msg/s")
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(total), "cpu-ns/msg")
			b.ReportMetric(float64(rm.ready.Load())/float64(total), "refills/msg")
		})
	}
}
