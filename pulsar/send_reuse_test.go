package pulsar

import (
	"context"
	"errors"
	"testing"

	"github.com/apache/pulsar-client-go/pulsar"
)

// A write's property map is reused: a publish must not carry the headers
// of the publish before it.
func TestReusedWriteCarriesNoPropertiesOfThePreviousOne(t *testing.T) {
	s := newFake(t, WithSubscriptionType(pulsar.Shared))
	ctx := context.Background()
	for i := 0; i < 50; i++ {
		if err := s.tr.PublishWithHeaders(ctx, "orders", envelope, map[string]string{"traceparent": "00-a-b-01"}); err != nil {
			t.Fatal(err)
		}
		if err := s.tr.Publish(ctx, "orders", envelope); err != nil {
			t.Fatal(err)
		}
	}
	sent := s.fc.producer("orders").messages()
	if len(sent) != 100 {
		t.Fatalf("sent %d messages, want 100", len(sent))
	}
	for i, m := range sent {
		_, has := m.Properties["traceparent"]
		if has != (i%2 == 0) {
			t.Fatalf("message %d: traceparent present=%v, want %v (properties %v)", i, has, i%2 == 0, m.Properties)
		}
		if m.Properties["bq-job"] != "urn:babel:orders:created" || m.EventTime.IsZero() {
			t.Fatalf("message %d: properties %v, event time %v", i, m.Properties, m.EventTime)
		}
	}
}

// heldSender keeps the callback of the last SendAsync for the test to call.
type heldSender struct {
	msg *pulsar.ProducerMessage
	cb  func(pulsar.MessageID, *pulsar.ProducerMessage, error)
}

func (h *heldSender) SendAsync(_ context.Context, msg *pulsar.ProducerMessage, cb func(pulsar.MessageID, *pulsar.ProducerMessage, error)) {
	h.msg, h.cb = msg, cb
}

// A write whose context ends before the client answered returns the
// context's error and is not released: the client still holds its message.
func TestWriteEndedByContextIsNotReleased(t *testing.T) {
	w := takeWrite()
	w.msg.Payload = []byte("body")
	w.props["k"] = "v"
	w.msg.Properties = w.props
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var h heldSender
	if _, err := w.send(ctx, &h); !errors.Is(err, context.Canceled) {
		t.Fatalf("send = %v, want context.Canceled", err)
	}
	h.cb(nil, h.msg, nil) // the client answers later
	if string(h.msg.Payload) != "body" || h.msg.Properties["k"] != "v" {
		t.Fatalf("message changed after the context ended: %+v", h.msg)
	}
}

// A write answered before its context ended returns the answer, and a
// second answer (never made by the client) does not block.
func TestWriteReturnsTheAnswer(t *testing.T) {
	w := takeWrite()
	want := errors.New("refused")
	p := answerSender(func(cb func(pulsar.MessageID, *pulsar.ProducerMessage, error), msg *pulsar.ProducerMessage) {
		cb(nil, msg, want)
		cb(nil, msg, nil)
	})
	if _, err := w.send(context.Background(), p); !errors.Is(err, want) {
		t.Fatalf("send = %v, want %v", err, want)
	}
}

type answerSender func(func(pulsar.MessageID, *pulsar.ProducerMessage, error), *pulsar.ProducerMessage)

func (a answerSender) SendAsync(_ context.Context, msg *pulsar.ProducerMessage, cb func(pulsar.MessageID, *pulsar.ProducerMessage, error)) {
	a(cb, msg)
}

// A producer with interceptors may keep a message after its send, and a
// batching one flushes at once only on Send: neither is given a reused
// write.
func TestProducerWithInterceptorsOrBatchingReusesNoWrite(t *testing.T) {
	p := &fakeProducer{}
	if o := newOutcomeProducer(p, &pulsar.ProducerOptions{DisableBatching: true}); o.async == nil {
		t.Error("a plain producer does not reuse writes")
	}
	opts := pulsar.ProducerOptions{DisableBatching: true, Interceptors: pulsar.ProducerInterceptors{nil}}
	if o := newOutcomeProducer(p, &opts); o.async != nil {
		t.Error("a producer with interceptors reuses writes")
	}
	if o := newOutcomeProducer(p, &pulsar.ProducerOptions{}); o.async != nil {
		t.Error("a batching producer reuses writes")
	}
	if o := newOutcomeProducer(p, &pulsar.ProducerOptions{DisableBatching: true, EnableChunking: true}); o.async != nil {
		t.Error("a chunking producer reuses writes")
	}
}

// The producers the Transport creates write through reused writes, unless
// WithProducerOptions turns batching back on.
func TestTransportProducersReuseWritesUnlessBatching(t *testing.T) {
	for _, batching := range []bool{false, true} {
		opts := []Option{WithSubscriptionType(pulsar.Shared)}
		if batching {
			opts = append(opts, WithProducerOptions(func(o *pulsar.ProducerOptions) { o.DisableBatching = false }))
		}
		s := newFake(t, opts...)
		if err := s.tr.Publish(context.Background(), "orders", envelope); err != nil {
			t.Fatal(err)
		}
		p, err := s.tr.producerFor(s.tr.Topic("orders"))
		if err != nil {
			t.Fatal(err)
		}
		if o, _ := p.(outcomeProducer); (o.async != nil) == batching {
			t.Errorf("batching %v: reused writes %v", batching, o.async != nil)
		}
	}
}
