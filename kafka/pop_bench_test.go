package kafka

import (
	"context"
	"testing"

	kafkago "github.com/segmentio/kafka-go"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
)

// loopReader returns the same record forever and drops commits: it
// measures the transport's own cost per delivery.
type loopReader struct{ m kafkago.Message }

func (r *loopReader) FetchMessage(context.Context) (kafkago.Message, error) { return r.m, nil }
func (r *loopReader) CommitMessages(context.Context, ...kafkago.Message) error {
	return nil
}

func BenchmarkPopAck(b *testing.B) {
	body := envelope(&testing.T{}, 2)
	hs, _ := projection(body, t0)
	m := kafkago.Message{Topic: "orders", Value: []byte(body), Headers: toKafkaHeaders(hs)}
	tr, err := New(WithWriter(&fakeWriter{log: newFakeLog()}), WithReaderFactory(func(string) Reader { return &loopReader{m: m} }))
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		msg, err := tr.Pop(ctx, "orders", 0)
		if err != nil || msg == nil {
			b.Fatal(err)
		}
		if err := tr.Ack(ctx, msg); err != nil {
			b.Fatal(err)
		}
	}
}

func (r *loopReader) Close() error { return nil }

// BenchmarkAppConsume measures the App's whole consume path (Pop, version
// gate, decode, routing, a no-op handler, Ack) over the transport, with a
// reader that returns the same record forever.
func BenchmarkAppConsume(b *testing.B) {
	benchAppConsume(b)
}

func benchAppConsume(b *testing.B) {
	body := envelope(&testing.T{}, 0)
	hs, _ := projection(body, t0)
	m := kafkago.Message{Topic: "orders", Value: []byte(body), Headers: toKafkaHeaders(hs)}
	var tr *Transport
	tr, err := New(WithWriter(&fakeWriter{log: newFakeLog()}), WithReaderFactory(func(q string) Reader {
		return &loopReader{m: m}
	}))
	if err != nil {
		b.Fatal(err)
	}
	defer tr.Close()
	app, err := babelqueue.NewApp(tr, babelqueue.WithDefaultQueue("orders"))
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var n int
	app.Handle("urn:babel:orders:created", func(context.Context, *babelqueue.Envelope) error {
		n++
		if n == b.N {
			cancel()
		}
		return nil
	})
	b.ReportAllocs()
	b.ResetTimer()
	if err := app.Consume(ctx, "orders"); err != nil {
		b.Fatal(err)
	}
}
