package babelqueue

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/babelqueue/babelqueue-go/core/driver"
)

// nopBatchTransport acknowledges every write without storing it, so that
// a bench measures the App's side of a publish only.
type nopBatchTransport struct{ receipts []driver.Receipt }

func (*nopBatchTransport) Features() driver.Features {
	return driver.Features{Keys: true, Headers: true}
}
func (*nopBatchTransport) Send(context.Context, *driver.Outgoing) (driver.Receipt, error) {
	return driver.Receipt{}, nil
}
func (*nopBatchTransport) Receive(context.Context, string, time.Duration) (*driver.ReceivedMessage, error) {
	return nil, nil
}
func (*nopBatchTransport) Ack(context.Context, *driver.ReceivedMessage) error      { return nil }
func (*nopBatchTransport) HandBack(context.Context, *driver.ReceivedMessage) error { return nil }
func (t *nopBatchTransport) SendBatch(_ context.Context, outs []*driver.Outgoing) ([]driver.Receipt, error) {
	if cap(t.receipts) < len(outs) {
		t.receipts = make([]driver.Receipt, len(outs))
	}
	return t.receipts[:len(outs)], nil
}

// BenchmarkPublishBatchNop measures the App's cost per message of a
// PublishBatch of 100 envelopes with the kafka batch bench's struct data
// (make, validate, encode, project) on a transport that does nothing.
func BenchmarkPublishBatchNop(b *testing.B) { benchPublishBatch(b, &nopBatchTransport{}) }

// releasingBatchTransport is nopBatchTransport keeping nothing of an
// acknowledged batch (driver.BatchReleaser), as the Kafka binding with its
// own writer does.
type releasingBatchTransport struct{ nopBatchTransport }

func (*releasingBatchTransport) ReleasesBatch() bool { return true }

// BenchmarkPublishBatchNopReleased is BenchmarkPublishBatchNop on a
// transport that releases its batches, so that the App reuses the
// Outgoings and the body buffer of one batch for the next.
func BenchmarkPublishBatchNopReleased(b *testing.B) { benchPublishBatch(b, &releasingBatchTransport{}) }

// benchPublishBatch publishes batches of 100 messages with the same struct
// data through an App on tr and reports the time per message.
func benchPublishBatch(b *testing.B, tr driver.Transport) {
	type payload struct {
		OrderID string `json:"order_id"`
		Note    string `json:"note"`
	}
	a, err := NewApp(tr, WithDefaultQueue("bench"), WithLogger(quietLogger()))
	if err != nil {
		b.Fatal(err)
	}
	data := payload{OrderID: "ord-0000001", Note: strings.Repeat("x", 60)}
	msgs := make([]BatchMessage, 100)
	for i := range msgs {
		msgs[i] = BatchMessage{URN: "urn:babel:orders:created", Data: data}
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := a.PublishBatch(ctx, msgs); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(msgs)), "ns/msg")
}
