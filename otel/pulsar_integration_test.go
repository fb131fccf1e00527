//go:build integration

package otel

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

// testPulsarRetry publishes a message that fails once on a Pulsar
// subscription configured by opts and checks its spans form one trace.
func testPulsarRetry(t *testing.T, viaHeader bool, opts ...pulsar.Option) {
	queue := brokertest.Topic(t, "otel")
	all := append([]pulsar.Option{pulsar.WithServiceURL(brokertest.PulsarURL(t)), pulsar.WithTimeouts(10*time.Second, 10*time.Second),
		pulsar.WithNackRedeliveryDelay(200 * time.Millisecond), pulsar.WithLogger(slog.New(slog.DiscardHandler))}, opts...)
	tr, err := pulsar.New(all...)
	if err != nil {
		t.Fatal(err)
	}
	closeWithin(t, tr.Close, 15*time.Second)

	h := newHarness(t)
	app := babelqueue.NewApp(h.tel.Transport(tr), babelqueue.WithDefaultQueue(queue), babelqueue.WithMaxAttempts(3),
		babelqueue.WithPollTimeout(200*time.Millisecond), babelqueue.WithLogger(slog.New(slog.DiscardHandler)))
	log := newHandlerLog()
	app.Handle(testURN, h.tel.Middleware(log.failOnce))

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	rootCtx, root := h.tp.Tracer("test").Start(ctx, "checkout")
	if _, err := app.Publish(rootCtx, testURN, map[string]any{"order_id": 1042}); err != nil {
		t.Fatal(err)
	}
	root.End()
	consumeUntilCleanup(t, app, queue)

	select {
	case <-log.done:
	case <-ctx.Done():
		t.Fatalf("the retry never succeeded; attempts seen %v", log.attempts)
	}
	first, _ := checkOneTrace(t, h, root.SpanContext(), queue, "pulsar")

	log.mu.Lock()
	defer log.mu.Unlock()
	if len(log.headers) != 2 || log.headers[0]["traceparent"] == "" || log.headers[1]["traceparent"] != log.headers[0]["traceparent"] {
		t.Errorf("traceparent not kept on the retry: %v", log.headers)
	}
	if viaHeader && log.headers[1][HeaderRetryLink] != formatLink(first.SpanContext) {
		t.Errorf("republished retry carries %s = %q, want the failed attempt %q", HeaderRetryLink, log.headers[1][HeaderRetryLink], formatLink(first.SpanContext))
	}
}

// Shared subscription: Retry negatively acknowledges and the broker
// redelivers the same message; the link comes from the decorator's memory.
func TestIntegrationPulsarSharedNackRetryKeepsOneTrace(t *testing.T) {
	testPulsarRetry(t, false, pulsar.WithSubscriptionType(apachepulsar.Shared))
}

// Exclusive subscription: Retry republishes a copy with every property
// kept, so the link to the failed attempt travels in HeaderRetryLink.
func TestIntegrationPulsarRepublishRetryKeepsOneTrace(t *testing.T) {
	testPulsarRetry(t, true, pulsar.WithSubscriptionType(apachepulsar.Exclusive), pulsar.WithRepublishRetries())
}
