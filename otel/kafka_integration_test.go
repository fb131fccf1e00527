//go:build integration

package otel

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"github.com/babelqueue/babelqueue-go/kafka"
	"github.com/babelqueue/babelqueue-go/tools/brokertest"
	"go.opentelemetry.io/otel/codes"
)

func kafkaTransport(t *testing.T, opts ...kafka.Option) *kafka.Transport {
	t.Helper()
	tr, err := kafka.New(append([]kafka.Option{kafka.WithBrokers(brokertest.KafkaBrokers(t)...)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	closeWithin(t, tr.Close, 15*time.Second)
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

// TestIntegrationKafkaDeadLetterKeepsTraceAndIsTheError: a message that
// always fails is retried through the tier, then dead-lettered. Only the
// last attempt has an error status; the dead letter carries the original
// traceparent, so reading the dead-letter topic continues the same trace.
func TestIntegrationKafkaDeadLetterKeepsTraceAndIsTheError(t *testing.T) {
	topic := brokertest.Topic(t, "otel-dlq")
	tiers := kafka.WithRetryTiers(300 * time.Millisecond)
	quiet := kafka.WithLogger(slog.New(slog.DiscardHandler))
	group := brokertest.Topic(t, "g")
	tr := kafkaTransport(t, kafka.WithGroupID(group), tiers, quiet)
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
	decorated := h.tel.Transport(tr)
	app := babelqueue.NewApp(decorated, babelqueue.WithDefaultQueue(topic), babelqueue.WithMaxAttempts(2),
		babelqueue.WithPollTimeout(200*time.Millisecond), babelqueue.WithLogger(slog.New(slog.DiscardHandler)))
	app.Handle(testURN, h.tel.Middleware(func(context.Context, *babelqueue.Envelope) error {
		return errors.New("invalid transition")
	}))
	rootCtx, root := h.tp.Tracer("test").Start(ctx, "checkout")
	if _, err := app.Publish(rootCtx, testURN, nil); err != nil {
		t.Fatal(err)
	}
	root.End()
	consumeUntilCleanup(t, app, topic)

	process := waitSpans(t, h, "process "+topic, 2, 30*time.Second)
	send := h.only(t, "send "+topic)
	if process[0].Status.Code != codes.Unset || process[1].Status.Code != codes.Error {
		t.Errorf("statuses %v, %v: want unset then error", process[0].Status, process[1].Status)
	}
	wantAttrs(t, process[1], map[string]string{"babelqueue.outcome": OutcomeDeadLettered, "babelqueue.reason": "failed", "babelqueue.attempt": "1"})
	if !linkedTo(process[1], process[0].SpanContext) {
		t.Errorf("last attempt does not link to the first")
	}
	if n := h.count(t, MetricDeadLettered, map[string]string{"messaging.system": "kafka", "babelqueue.reason": "failed"}); n != 1 {
		t.Errorf("dead_lettered = %d, want 1", n)
	}

	// Read the dead letter through the decorated transport (another group).
	reader := h.tel.Transport(kafkaTransport(t, kafka.WithGroupID(brokertest.Topic(t, "dlq-reader")), quiet))
	var msg *babelqueue.ReceivedMessage
	for msg == nil && ctx.Err() == nil {
		if msg, err = reader.Pop(ctx, topic+".dlq", time.Second); err != nil {
			t.Fatal(err)
		}
	}
	if msg == nil {
		t.Fatal("no dead letter")
	}
	if err := reader.Ack(ctx, msg); err != nil {
		t.Fatal(err)
	}
	if got := msg.Headers["traceparent"]; got != formatLink(send.SpanContext) {
		t.Errorf("dead letter traceparent %q, want the original %q", got, formatLink(send.SpanContext))
	}
	dlqSpan := h.only(t, "process "+topic+".dlq")
	if dlqSpan.Parent.SpanID() != send.SpanContext.SpanID() || dlqSpan.SpanContext.TraceID() != root.SpanContext().TraceID() {
		t.Errorf("reading the dead letter does not continue the message's trace")
	}
}
