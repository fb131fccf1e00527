package pulsar

import (
	"context"
	"testing"

	"github.com/apache/pulsar-client-go/pulsar"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
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
	tr, fc := benchReceiveSetup(b)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	fc.feed(ctx, b.N, 200)
	runNoopConsumer(ctx, b, cancel, tr, fc, babelqueue.WithConcurrency(64, babelqueue.OrderKey))
}
