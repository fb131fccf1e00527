package kafka

import (
	"context"
	"strings"
	"testing"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
)

// BenchmarkAppPublishBatch measures the client-side cost of App.PublishBatch
// of 100 envelopes of about 300 bytes through the transport (make, encode,
// project, build the records), with a writer that drops them: what the
// kafka-publish-batch-throughput bench pays on top of kafka-go.
func BenchmarkAppPublishBatch(b *testing.B) {
	tr, err := New(WithWriter(fakeWriterNop{}), WithReaderFactory(func(string) Reader { return nil }))
	if err != nil {
		b.Fatal(err)
	}
	app, err := babelqueue.NewApp(tr, babelqueue.WithDefaultQueue("orders"))
	if err != nil {
		b.Fatal(err)
	}
	data := struct {
		OrderID string `json:"order_id"`
		Note    string `json:"note"`
	}{OrderID: "ord-0000001", Note: strings.Repeat("x", 60)}
	msgs := make([]babelqueue.BatchMessage, 100)
	for i := range msgs {
		msgs[i] = babelqueue.BatchMessage{URN: "urn:babel:orders:created", Data: data}
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := app.PublishBatch(ctx, msgs); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTransportPublish measures the client-side cost of one
// Transport.Publish of a ready envelope (projection, record) with a writer
// that drops it: what kafka-publish-throughput pays on top of kafka-go.
func BenchmarkTransportPublish(b *testing.B) {
	tr, err := New(WithWriter(fakeWriterNop{}), WithReaderFactory(func(string) Reader { return nil }))
	if err != nil {
		b.Fatal(err)
	}
	body := envelope(&testing.T{}, 0)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if err := tr.Publish(ctx, "orders", body); err != nil {
			b.Fatal(err)
		}
	}
}
