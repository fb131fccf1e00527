//go:build integration

package otel

import (
	"context"
	"log/slog"
	"testing"
	"time"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"github.com/babelqueue/babelqueue-go/kafka"
	"github.com/babelqueue/babelqueue-go/tools/brokertest"
)

func kafkaTransport(t *testing.T, opts ...kafka.Option) *kafka.Transport {
	t.Helper()
	tr, err := kafka.New(append([]kafka.Option{kafka.WithBrokers(brokertest.KafkaBrokers(t)...)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tr.Close() })
	return tr
}

// TestIntegrationKafkaRetryTierKeepsOneTrace: a message published under a
// root span fails once, goes to the retry tier, is carried back by the
// Reinjector and succeeds. Its spans form one trace: root → send →
// process (attempt 0) and send → process (attempt 1), the second linking
// to the first.
func TestIntegrationKafkaRetryTierKeepsOneTrace(t *testing.T) {
	topic := brokertest.Topic(t, "otel")
	tiers := kafka.WithRetryTiers(500 * time.Millisecond)
	quiet := kafka.WithLogger(slog.New(slog.DiscardHandler))
	tr := kafkaTransport(t, kafka.WithGroupID(brokertest.Topic(t, "g")), tiers, quiet)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := tr.EnsureTopics(ctx, topic, 1, 1); err != nil {
		t.Fatal(err)
	}
	reinjector, err := kafkaTransport(t, kafka.WithGroupID(brokertest.Topic(t, "reinject")), tiers, quiet).NewReinjector(topic)
	if err != nil {
		t.Fatal(err)
	}
	rctx, rcancel := context.WithCancel(context.Background())
	rdone := make(chan error, 1)
	go func() { rdone <- reinjector.Run(rctx) }()
	t.Cleanup(func() {
		rcancel()
		if err := <-rdone; err != nil {
			t.Errorf("Reinjector.Run: %v", err)
		}
	})

	h := newHarness(t)
	app := babelqueue.NewApp(h.tel.Transport(tr), babelqueue.WithDefaultQueue(topic), babelqueue.WithMaxAttempts(3),
		babelqueue.WithPollTimeout(200*time.Millisecond), babelqueue.WithLogger(slog.New(slog.DiscardHandler)))
	log := newHandlerLog()
	app.Handle(testURN, h.tel.Middleware(log.failOnce))

	rootCtx, root := h.tp.Tracer("test").Start(ctx, "checkout")
	if _, err := app.Publish(rootCtx, testURN, map[string]any{"order_id": 1042}); err != nil {
		t.Fatal(err)
	}
	root.End()
	consumeUntilCleanup(t, app, topic)

	select {
	case <-log.done:
	case <-ctx.Done():
		t.Fatalf("the retry never succeeded; attempts seen %v", log.attempts)
	}
	checkOneTrace(t, h, root.SpanContext(), topic, "kafka")

	log.mu.Lock()
	defer log.mu.Unlock()
	if len(log.headers) != 2 || log.headers[0]["traceparent"] == "" || log.headers[1]["traceparent"] != log.headers[0]["traceparent"] {
		t.Errorf("traceparent not forwarded untouched through the tier and the Reinjector: %v", log.headers)
	}
}
