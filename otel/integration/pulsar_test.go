//go:build integration

package integration

import (
	"context"
	"log/slog"
	"testing"
	"time"

	apachepulsar "github.com/apache/pulsar-client-go/pulsar"

	"github.com/babelqueue/babelqueue-go/brokertest"
	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"github.com/babelqueue/babelqueue-go/pulsar"
)

func pulsarTransport(t *testing.T, opts ...pulsar.Option) *pulsar.Transport {
	t.Helper()
	all := append([]pulsar.Option{pulsar.WithServiceURL(brokertest.PulsarURL(t)), pulsar.WithTimeouts(10*time.Second, 10*time.Second),
		pulsar.WithNackRedeliveryDelay(200 * time.Millisecond), pulsar.WithMaxAttempts(2), pulsar.WithLogger(slog.New(slog.DiscardHandler))}, opts...)
	tr, err := pulsar.New(all...)
	if err != nil {
		t.Fatal(err)
	}
	closeWithin(t, tr.Close, 15*time.Second)
	return tr
}

// testPulsarRetryToDeadLetter publishes a message that always fails on a
// subscription configured by opts: it is retried once, then dead-lettered,
// and a second consumer reads the dead letter; see checkRetryToDeadLetter.
func testPulsarRetryToDeadLetter(t *testing.T, viaHeader bool, opts ...pulsar.Option) {
	queue := brokertest.Topic(t, "otel")
	h := newHarness(t, "pulsar")
	app, err := babelqueue.NewApp(pulsarTransport(t, opts...), babelqueue.WithHooks(h.tel.Hooks()), babelqueue.WithDefaultQueue(queue),
		babelqueue.WithMaxAttempts(2), babelqueue.WithPollTimeout(200*time.Millisecond), babelqueue.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	app.Handle(testURN, rec.fail)

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	rootCtx, root := h.TP.Tracer("test").Start(ctx, "checkout")
	if _, err := app.Publish(rootCtx, testURN, map[string]any{"order_id": 1042}); err != nil {
		t.Fatal(err)
	}
	root.End()
	consume(t, app, queue)
	process := checkRetryToDeadLetter(t, h, rec, root.SpanContext(), queue, "pulsar", queue, viaHeader)

	reader, err := babelqueue.NewApp(pulsarTransport(t, pulsar.WithSubscription(brokertest.Topic(t, "dlq-reader")), pulsar.WithSubscriptionType(apachepulsar.Shared)), babelqueue.WithHooks(h.tel.Hooks()),
		babelqueue.WithPollTimeout(200*time.Millisecond), babelqueue.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	reader.Handle(testURN, func(context.Context, *babelqueue.Envelope) error { return nil })
	consume(t, reader, queue+".dlq")
	checkDeadLetterContinuesTrace(t, h, queue, process[1])
}

// Shared subscription: the retry is a negative acknowledgement and the
// broker redelivers the same message, so the link to the failed attempt
// comes from the link memory.
func TestPulsarSharedNackRetryToDeadLetterKeepsOneTrace(t *testing.T) {
	testPulsarRetryToDeadLetter(t, false, pulsar.WithSubscriptionType(apachepulsar.Shared))
}

// Exclusive subscription with republished retries: the link travels in
// the copy's HeaderRetryLink.
func TestPulsarRepublishRetryToDeadLetterKeepsOneTrace(t *testing.T) {
	testPulsarRetryToDeadLetter(t, true, pulsar.WithSubscriptionType(apachepulsar.Exclusive), pulsar.WithRepublishRetries())
}
