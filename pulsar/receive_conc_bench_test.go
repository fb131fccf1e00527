package pulsar

import (
	"context"
	"testing"

	"github.com/apache/pulsar-client-go/pulsar"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"github.com/babelqueue/babelqueue-go/core/bqtest"
)

// feed replaces what fill queued with a goroutine that sends n deliveries,
// keyed round robin over keys keys, one at a time on a channel of the
// client's size (10), as pulsar-client-go's dispatcher does; it stops when
// ctx ends.
func (c *benchConsumerFake) feed(ctx context.Context, n, keys int) {
	c.ch = make(chan pulsar.ConsumerMessage, 10)
	msgs := make([]pulsar.Message, keys)
	base := c.msg.(*fakeMessage)
	for i := range msgs {
		m := *base
		m.key = "key-" + string(rune('a'+i%26)) + string(rune('a'+i/26))
		msgs[i] = &m
	}
	go func() {
		for i := 0; i < n; i++ {
			select {
			case c.ch <- pulsar.ConsumerMessage{Message: msgs[i%keys]}:
			case <-ctx.Done():
				return
			}
		}
	}()
}

// BenchmarkConsumerNoopHandlerConcurrentFed measures the App with 64
// handlers at once (OrderKey, 200 keys) over the Transport, fed one
// message at a time the way the client's dispatcher feeds its channel, so
// that the prefetcher's handoffs and the waits of Pop are in the
// measurement: Pop, decode, route, handle, Ack.
func BenchmarkConsumerNoopHandlerConcurrentFed(b *testing.B) {
	benchConcurrentFed(b, 200)
}

// BenchmarkConsumerNoopHandlerConcurrentOneKeyFed is
// BenchmarkConsumerNoopHandlerConcurrentFed with every message on one key,
// so one lane, as the broker bench's keyless messages on one partition
// (pulsar-consume-concurrent-throughput): the loop's own handoffs
// between the worker that receives and the one that runs the lane are in
// the measurement.
func BenchmarkConsumerNoopHandlerConcurrentOneKeyFed(b *testing.B) {
	benchConcurrentFed(b, 1)
}

// benchConcurrentFed runs BenchmarkConsumerNoopHandlerConcurrentFed over
// keys keys and also reports the process CPU time per message
// (cpu-ns/msg), which a loaded host changes less than the time per
// message.
func benchConcurrentFed(b *testing.B, keys int) {
	tr, fc := benchReceiveSetup(b)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	fc.feed(ctx, b.N, keys)
	cpu0 := bqtest.ProcessCPU()
	runNoopConsumer(ctx, b, cancel, tr, fc, babelqueue.WithConcurrency(64, babelqueue.OrderKey))
	b.ReportMetric(float64((bqtest.ProcessCPU()-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/msg")
}
