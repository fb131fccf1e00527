//go:build !race

package pulsar

import (
	"context"
	"testing"

	"github.com/apache/pulsar-client-go/pulsar"
)

// answeringProducer answers every SendAsync at once and keeps nothing, so
// that a publish through it costs only the Transport's own work.
type answeringProducer struct{ pulsar.Producer }

func (answeringProducer) SendAsync(_ context.Context, msg *pulsar.ProducerMessage, cb func(pulsar.MessageID, *pulsar.ProducerMessage, error)) {
	cb(nil, msg, nil)
}

func (answeringProducer) Send(context.Context, *pulsar.ProducerMessage) (pulsar.MessageID, error) {
	return nil, nil
}

func (answeringProducer) Close() {}

// The Transport's own part of a publish (projection, properties, message,
// the wait for the answer) allocates nothing: what a publish allocates is
// pulsar-client-go's. Not under the race detector, whose sync.Pool drops
// values at random.
func TestPublishAllocatesNothingOfItsOwn(t *testing.T) {
	s := newFake(t, WithSubscriptionType(pulsar.Shared))
	ctx := context.Background()
	if err := s.tr.Publish(ctx, "orders", envelope); err != nil {
		t.Fatal(err)
	}
	s.tr.made.Store(s.tr.Topic("orders"), newOutcomeProducer(answeringProducer{}, &pulsar.ProducerOptions{DisableBatching: true}))
	headers := map[string]string{"traceparent": "00-a-b-01"}
	for name, publish := range map[string]func() error{
		"Publish":            func() error { return s.tr.Publish(ctx, "orders", envelope) },
		"PublishWithHeaders": func() error { return s.tr.PublishWithHeaders(ctx, "orders", envelope, headers) },
	} {
		var err error
		if n := testing.AllocsPerRun(1000, func() { err = publish() }); n != 0 {
			t.Errorf("%s allocated %v times per call, want 0", name, n)
		}
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
}
