package pulsar

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"github.com/babelqueue/babelqueue-go/core/wire"
)

// benchConsumerFake delivers what fill queued, through Receive and, as
// pulsar.Consumer does, through Chan, and counts acks, so that a benchmark
// measures the binding's own per-message work.
type benchConsumerFake struct {
	msg   pulsar.Message
	ch    chan pulsar.ConsumerMessage
	acked atomic.Int64
}

// fill queues n deliveries of the message.
func (c *benchConsumerFake) fill(n int) {
	c.ch = make(chan pulsar.ConsumerMessage, n)
	for i := 0; i < n; i++ {
		c.ch <- pulsar.ConsumerMessage{Message: c.msg}
	}
}

func (c *benchConsumerFake) Chan() <-chan pulsar.ConsumerMessage { return c.ch }

func (c *benchConsumerFake) Receive(ctx context.Context) (pulsar.Message, error) {
	select {
	case cm := <-c.ch:
		return cm.Message, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
func (c *benchConsumerFake) Ack(pulsar.Message) error { c.acked.Add(1); return nil }
func (c *benchConsumerFake) Nack(pulsar.Message)      {}
func (c *benchConsumerFake) Close()                   {}

type benchClientFake struct{ c *benchConsumerFake }

func (f benchClientFake) CreateProducer(pulsar.ProducerOptions) (producer, error) {
	return &fakeProducer{}, nil
}
func (f benchClientFake) Subscribe(pulsar.ConsumerOptions) (consumer, error) { return f.c, nil }
func (f benchClientFake) Close()                                             {}

// benchReceiveSetup returns a Transport whose consumer delivers one
// projected envelope, as the broker benchmark publishes it.
func benchReceiveSetup(b *testing.B) (*Transport, *benchConsumerFake) {
	return benchReceiveSetupT(b)
}

// benchReceiveSetupT is benchReceiveSetup for a test or a benchmark.
func benchReceiveSetupT(b testing.TB) (*Transport, *benchConsumerFake) {
	b.Helper()
	env, err := babelqueue.Make("urn:babel:bench:ping", map[string]any{"order_id": 1042, "note": "benchmark"}, babelqueue.WithQueue("q"))
	if err != nil {
		b.Fatal(err)
	}
	body, err := env.Encode()
	if err != nil {
		b.Fatal(err)
	}
	props := map[string]string{}
	for _, h := range wire.ProjectBody(body).Headers() {
		props[h.Key] = h.Value
	}
	fc := &benchConsumerFake{msg: &fakeMessage{payload: body, props: props}}
	cfg := defaultConfig()
	cfg.serviceURL = "pulsar://127.0.0.1:6650"
	cfg.subType, cfg.subTypeDeclared = pulsar.Shared, true
	tr := newTransport(cfg, benchClientFake{fc}, false, nil, nil)
	b.Cleanup(func() { _ = tr.Close() })
	return tr, fc
}

// BenchmarkPopAck measures Pop and Ack of one message.
func BenchmarkPopAck(b *testing.B) {
	tr, fc := benchReceiveSetup(b)
	fc.fill(b.N)
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		msg, err := tr.Pop(ctx, "q", time.Second)
		if err != nil || msg == nil {
			b.Fatalf("Pop = %v, %v", msg, err)
		}
		if err := tr.Ack(ctx, msg); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkConsumerNoopHandler measures the App over the Transport with a
// handler that does nothing: Pop, decode, route, handle, Ack.
func BenchmarkConsumerNoopHandler(b *testing.B) {
	tr, fc := benchReceiveSetup(b)
	fc.fill(b.N)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	runNoopConsumer(ctx, b, cancel, tr, fc)
}

// runNoopConsumer times a Consumer (App) with appOpts and a handler that
// does nothing until it has handled b.N messages, then checks that fc saw
// every one acknowledged.
func runNoopConsumer(ctx context.Context, b *testing.B, cancel context.CancelFunc, tr *Transport, fc *benchConsumerFake, appOpts ...babelqueue.Option) {
	n := int64(b.N)
	var handled atomic.Int64
	c := NewConsumer(tr, "q", map[string]babelqueue.Handler{
		"urn:babel:bench:ping": func(context.Context, *babelqueue.Envelope) error {
			if handled.Add(1) == n {
				cancel()
			}
			return nil
		},
	}, appOpts...)
	b.ReportAllocs()
	b.ResetTimer()
	if err := c.Run(ctx); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	if got := fc.acked.Load(); got < n {
		b.Fatalf("acked %d of %d", got, n)
	}
}
